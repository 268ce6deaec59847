package nft

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

func ruleCount(f *fakeConn) int {
	n := 0
	for _, t := range f.state {
		for _, rs := range t.rules {
			n += len(rs)
		}
	}
	return n
}

func TestProgramTransactions(t *testing.T) {
	base := Config{VIPs: mustAddrs("20.0.0.1", "2000::1"), Queues: QueueRange{First: 0, Count: 2}}
	tests := []struct {
		name        string
		next        func(Config) Config
		wantRebuild bool
		want4       int
		want6       int
	}{
		{"same config", func(c Config) Config { return c }, false, 1, 1},
		{"new VIPs", func(c Config) Config {
			c.VIPs = mustAddrs("20.0.0.2", "20.0.0.3", "::ffff:20.0.0.4", "20.0.0.2")
			return c
		}, false, 3, 0},
		{"no VIPs", func(c Config) Config { c.VIPs = nil; return c }, false, 0, 0},
		{"other queues", func(c Config) Config { c.Queues.First = 4; return c }, true, 1, 1},
		{"fanout", func(c Config) Config { c.Fanout = true; return c }, true, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeConn()
			p, err := New(f, WithQueueMode(QueueCompat))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Program(base); err != nil {
				t.Fatalf("first Program: %v", err)
			}
			if !slices.Contains(f.ops, "DelTable") || ruleCount(f) != 7 {
				t.Fatalf("first Program: ops %v, %d rules", f.ops, ruleCount(f))
			}
			f.ops = nil
			if err := p.Program(tt.next(base)); err != nil {
				t.Fatalf("second Program: %v", err)
			}
			if got := slices.Contains(f.ops, "DelTable"); got != tt.wantRebuild {
				t.Errorf("rebuilt = %v, want %v (ops %v)", got, tt.wantRebuild, f.ops)
			}
			if len(f.state) != 1 || ruleCount(f) != 7 {
				t.Errorf("%d tables, %d rules; want 1, 7", len(f.state), ruleCount(f))
			}
			if got4, got6 := len(f.elementsOf(SetVIPs4)), len(f.elementsOf(SetVIPs6)); got4 != tt.want4 || got6 != tt.want6 {
				t.Errorf("elements v4 %d v6 %d, want %d %d", got4, got6, tt.want4, tt.want6)
			}
		})
	}
}

var ourTable = &nftables.Table{Name: DefaultTableName, Family: nftables.TableFamilyINet}

func TestProgramRebuildsForeignContent(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func(tb *fakeTable)
		rebuild bool // else the foreign object is deleted on its own
	}{
		{"extra rule", func(tb *fakeTable) {
			tb.rules[ChainPrerouting] = append(tb.rules[ChainPrerouting], &nftables.Rule{})
		}, true},
		{"missing rule", func(tb *fakeTable) { tb.rules[ChainOutput] = tb.rules[ChainOutput][:1] }, true},
		{"extra base chain", func(tb *fakeTable) {
			tb.chains = append(tb.chains, &nftables.Chain{Name: "x", Table: &nftables.Table{Name: DefaultTableName},
				Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter})
		}, true},
		{"chain priority", func(tb *fakeTable) {
			c := *tb.chains[0]
			c.Priority = nftables.ChainPriorityFilter
			tb.chains[0] = &c
		}, true},
		{"VIP set of another type", func(tb *fakeTable) {
			tb.sets[SetVIPs4] = &fakeSet{set: &nftables.Set{Name: SetVIPs4, KeyType: nftables.TypeIP6Addr, Table: ourTable}}
		}, true},
		{"extra regular chain", func(tb *fakeTable) {
			tb.chains = append(tb.chains, &nftables.Chain{Name: "x", Table: &nftables.Table{Name: DefaultTableName}})
		}, false},
		{"extra set", func(tb *fakeTable) {
			tb.sets["x"] = &fakeSet{set: &nftables.Set{Name: "x", KeyType: nftables.TypeIPAddr, Table: ourTable}}
		}, false},
		{"extra counter", func(tb *fakeTable) { tb.objs["x"] = true }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeConn()
			p, _ := New(f, WithQueueMode(QueueNative))
			cfg := Config{VIPs: mustAddrs("20.0.0.1"), Queues: QueueRange{First: 0, Count: 1}}
			if err := p.Program(cfg); err != nil {
				t.Fatal(err)
			}
			tt.tamper(f.state[DefaultTableName])
			f.gen++ // someone else's commit
			if err := p.Program(cfg); err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(f.ops, "DelTable"); got != tt.rebuild {
				t.Errorf("rebuilt = %v, want %v: ops %v", got, tt.rebuild, f.ops)
			}
			tb := f.state[DefaultTableName]
			if ruleCount(f) != 7 || len(tb.chains) != 3 || len(tb.sets) != 2 || len(tb.objs) != 0 {
				t.Errorf("after the repair: %d rules, %d chains, %d sets, %d counters", ruleCount(f), len(tb.chains), len(tb.sets), len(tb.objs))
			}
		})
	}
}

func TestProgramErrors(t *testing.T) {
	f := newFakeConn()
	p, _ := New(f, WithQueueMode(QueueCompat))
	for _, cfg := range []Config{
		{Queues: QueueRange{First: 1, Count: 0}},
		{Queues: QueueRange{First: 0xfffe, Count: 3}},
		{VIPs: []netip.Addr{{}}, Queues: QueueRange{Count: 1}},
		{VIPs: mustAddrs("0.0.0.0"), Queues: QueueRange{Count: 1}},
	} {
		if err := p.Program(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Program(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if len(f.state) != 0 || len(f.pending) != 0 {
		t.Errorf("invalid configs touched the kernel")
	}
	boom := errors.New("boom")
	f.flushErr = boom
	if err := p.Program(Config{Queues: QueueRange{Count: 1}}); !errors.Is(err, boom) {
		t.Errorf("Program with failing commit = %v, want wrapped boom", err)
	}
	if len(f.state) != 0 {
		t.Errorf("failed commit left state")
	}
}

func TestCleanup(t *testing.T) {
	f := newFakeConn()
	p, _ := New(f, WithQueueMode(QueueCompat))
	f.state["other"] = &fakeTable{}
	if err := p.Program(Config{Queues: QueueRange{Count: 1}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if err := p.Cleanup(); err != nil {
			t.Fatalf("Cleanup: %v", err)
		}
		if f.state[DefaultTableName] != nil || f.state["other"] == nil {
			t.Errorf("after Cleanup tables = %v", f.state)
		}
	}
}

func TestProbeQueueMode(t *testing.T) {
	isQueue := func(e expr.Any) bool { _, ok := e.(*expr.Queue); return ok }
	isTarget := func(e expr.Any) bool { _, ok := e.(*expr.Target); return ok }
	tests := []struct {
		name    string
		reject  func(expr.Any) bool
		want    QueueMode
		wantErr bool
	}{
		{"native available", nil, QueueNative, false},
		{"compat only", isQueue, QueueCompat, false},
		{"neither", func(e expr.Any) bool { return isQueue(e) || isTarget(e) }, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeConn()
			f.rejectExpr = tt.reject
			p, err := New(f)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && p.Mode() != tt.want {
				t.Errorf("mode = %s, want %s", p.Mode(), tt.want)
			}
			if len(f.state) != 0 {
				t.Errorf("probe left tables: %v", f.state)
			}
		})
	}
}

func TestQueueExpr(t *testing.T) {
	tests := []struct {
		q      QueueRange
		fanout bool
		want   [3]uint16 // queuenum, total, flags of xt_NFQ_info_v3
	}{
		{QueueRange{First: 0, Count: 1}, false, [3]uint16{0, 1, 0}},
		{QueueRange{First: 258, Count: 4}, true, [3]uint16{258, 4, 2}},
	}
	for _, tt := range tests {
		tg, ok := queueExpr(QueueCompat, tt.q, tt.fanout).(*expr.Target)
		if !ok || tg.Name != "NFQUEUE" || tg.Rev != 3 {
			t.Fatalf("compat expr = %#v", tg)
		}
		info := *tg.Info.(*xt.Unknown)
		if len(info) != 8 {
			t.Fatalf("info has %d bytes, want 8", len(info))
		}
		got := [3]uint16{binary.NativeEndian.Uint16(info), binary.NativeEndian.Uint16(info[2:]), binary.NativeEndian.Uint16(info[4:])}
		if got != tt.want {
			t.Errorf("compat info %v, want %v", got, tt.want)
		}
		nq := queueExpr(QueueNative, tt.q, tt.fanout).(*expr.Queue)
		if nq.Num != tt.want[0] || nq.Total != tt.want[1] || (nq.Flag == expr.QueueFlagFanout) != tt.fanout ||
			nq.Flag&expr.QueueFlagBypass != 0 {
			t.Errorf("native expr %+v for %+v fanout %v", nq, tt.q, tt.fanout)
		}
	}
}

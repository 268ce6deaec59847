package bgp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/model"
)

// The integration tests run the speaker in a child process inside a network
// namespace (GoBGP opens sockets on its own goroutines, so setns in the test
// process would not do). The child is this test binary started with
// helperEnv set: TestMain runs runHelperSpeaker instead of the tests; it
// reads one JSON helperCmd per stdin line and writes one JSON helperEvent
// per stdout line.
const helperEnv = "SLLBRD_BGP_HELPER"

type helperCmd struct {
	Op      string         `json:"op"` // apply, announce, down, up, stats, shutdown
	Routers []model.Router `json:"routers,omitempty"`
	VIPs    []netip.Addr   `json:"vips,omitempty"`
	Addr    netip.Addr     `json:"addr,omitzero"`
	Reason  string         `json:"reason,omitempty"`
	Drain   time.Duration  `json:"drain,omitempty"`
}

type helperEvent struct {
	Ev       string      `json:"ev"` // done, gateways, stats
	Op       string      `json:"op,omitempty"`
	Err      string      `json:"err,omitempty"`
	Gateways *Gateways   `json:"gateways,omitempty"`
	Stats    []PeerStats `json:"stats,omitempty"`
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		runHelperSpeaker()
	}
	os.Exit(m.Run())
}

// runHelperSpeaker serves helperCmds until stdin ends or a shutdown, then
// exits the process.
func runHelperSpeaker() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	opts := []Option{WithLogger(logger), WithRouterID(netip.MustParseAddr("169.254.100.1"))}
	if os.Getenv(helperEnv+"_BIND") == "1" {
		opts = append(opts, WithSourcePortBinding(true))
	}
	sp, err := New(ctx, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: new speaker:", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	emit := func(e helperEvent) {
		outMu.Lock()
		defer outMu.Unlock()
		_ = enc.Encode(e)
	}
	go func() {
		for g := range sp.GatewayUpdates() {
			emit(helperEvent{Ev: "gateways", Gateways: &g})
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var c helperCmd
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			emit(helperEvent{Ev: "done", Err: err.Error()})
			continue
		}
		ev := helperEvent{Ev: "done", Op: c.Op}
		switch c.Op {
		case "apply":
			err = sp.Apply(ctx, c.Routers)
		case "announce":
			err = sp.Announce(ctx, c.VIPs)
		case "down":
			err = sp.PeerDown(ctx, c.Addr, c.Reason)
		case "up":
			err = sp.PeerUp(ctx, c.Addr)
		case "stats":
			ev.Stats, err = sp.Stats(ctx)
		case "shutdown":
			err = sp.Shutdown(ctx, c.Drain)
		default:
			err = fmt.Errorf("unknown op %q", c.Op)
		}
		if err != nil {
			ev.Err = err.Error()
		}
		emit(ev)
		if c.Op == "shutdown" {
			os.Exit(0)
		}
	}
	os.Exit(0)
}

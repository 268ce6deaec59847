package bpfpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/maglev"
)

// configSCTPPortsOnly is bpf/ingress.c's CONFIG_SCTP_PORTS_ONLY.
const configSCTPPortsOnly = 1

// tcActUnspec is TC_ACT_UNSPEC (-1) as BPF_PROG_TEST_RUN returns it.
const tcActUnspec = ^uint32(0)

// Frame layout, for ErrFrameSize.
const (
	ethHeaderLen     = 14
	etherTypeIPv4    = 0x0800
	etherTypeIPv6    = 0x86dd
	ipv4MinHeaderLen = 20
	ipv6HeaderLen    = 40
)

// Options configure Load.
type Options struct {
	// MaxTableSize is the largest Maglev table (M) Configure accepts: the
	// size of the table map. Zero means maglev.MinSize.
	MaxTableSize int
}

// Datapath is the loaded program and its maps. Close releases them.
type Datapath struct {
	objs    ingressObjects
	maxSize int
}

// Load loads the program into the kernel (it attaches nothing). It needs
// CAP_BPF and CAP_NET_ADMIN (root will do) and a kernel with BTF and
// sched_cls programs; errors say which is missing.
func Load(opts Options) (*Datapath, error) {
	size := opts.MaxTableSize
	if size == 0 {
		size = maglev.MinSize
	}
	if size < 1 || size > maglev.MaxSize {
		return nil, fmt.Errorf("bpfpath: table size %d: want 1..%d", size, maglev.MaxSize)
	}
	spec, err := loadIngress()
	if err != nil {
		return nil, fmt.Errorf("bpfpath: the embedded object: %w", err)
	}
	spec.Maps[ingressMapMaglevTable].MaxEntries = uint32(size)
	if err := spec.Variables[ingressVarFlowSeed].Set(maglev.FlowSeed); err != nil {
		return nil, fmt.Errorf("bpfpath: setting the flow seed: %w", err)
	}
	d := &Datapath{maxSize: size}
	if err := spec.LoadAndAssign(&d.objs, nil); err != nil {
		return nil, loadError(err)
	}
	return d, nil
}

// loadError says what the kernel lacks when loading failed.
func loadError(err error) error {
	var ve *ebpf.VerifierError
	switch {
	case errors.Is(err, unix.EPERM) || errors.Is(err, os.ErrPermission):
		return fmt.Errorf("bpfpath: loading the eBPF datapath needs CAP_BPF and CAP_NET_ADMIN (or root): %w", err)
	case errors.As(err, &ve):
		return fmt.Errorf("bpfpath: the kernel's verifier rejected the eBPF datapath (its whole log: %%+v of the *ebpf.VerifierError): %w", err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("bpfpath: the kernel lacks a feature the eBPF datapath needs (CONFIG_BPF_SYSCALL, sched_cls programs, BTF; tcx needs 6.6): %w", err)
	}
	return fmt.Errorf("bpfpath: loading the eBPF datapath: %w", err)
}

// Program is the tc ingress program, for attaching (link.AttachTCX).
func (d *Datapath) Program() *ebpf.Program { return d.objs.SllbrdIngress }

// Configure gives the program a Service's Maglev table t (nil or without
// an active slot: no table, every packet StatusPuntNoTable) and whether it
// hashes SCTP on ports only. See the package documentation on atomicity.
func (d *Datapath) Configure(t *maglev.Table, sctpPortsOnly bool) error {
	entries := t.AppendEntrySlots(nil)
	if len(entries) > d.maxSize {
		return fmt.Errorf("bpfpath: table size %d exceeds the table map's %d (Options.MaxTableSize)", len(entries), d.maxSize)
	}
	if len(entries) > 0 {
		keys := make([]uint32, len(entries))
		values := make([]uint32, len(entries))
		for i, slot := range entries {
			keys[i], values[i] = uint32(i), uint32(slot)
		}
		if _, err := d.objs.MaglevTable.BatchUpdate(keys, values, nil); err != nil {
			return fmt.Errorf("bpfpath: writing the Maglev table: %w", err)
		}
	}
	cfg := ingressConfig{TableSize: uint32(len(entries))}
	if sctpPortsOnly {
		cfg.Flags |= configSCTPPortsOnly
	}
	if err := d.objs.Config.Put(uint32(0), cfg); err != nil {
		return fmt.Errorf("bpfpath: writing the configuration: %w", err)
	}
	return nil
}

// ErrFrameSize: BPF_PROG_TEST_RUN refuses the frame (EINVAL): shorter
// than an Ethernet header, or than the minimal IPv4 (20 bytes) or IPv6 (40)
// header its Ethernet type announces (kernel 6.18), or longer than a page
// less the skb's head- and tailroom (3712 bytes on x86-64). The program
// itself punts such short frames as malformed when they arrive on a link.
var ErrFrameSize = errors.New("bpfpath: a frame size BPF_PROG_TEST_RUN refuses")

// testRunFrameMax is a frame length every kernel's BPF_PROG_TEST_RUN takes.
const testRunFrameMax = 2048

// Explain runs the program once on frame (an Ethernet frame) through
// BPF_PROG_TEST_RUN and returns its Result, for operators (what would the
// datapath decide for this packet) and tests. It changes nothing but the
// program's run counters.
func (d *Datapath) Explain(frame []byte) (Result, error) {
	if testRunRefuses(frame) {
		return Result{}, fmt.Errorf("%w: %d bytes", ErrFrameSize, len(frame))
	}
	// cb starts with values the program never writes, so a result that
	// is not its own shows.
	in := skbContext{CB: [5]uint32{0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef}}
	var out skbContext
	ret, err := d.objs.SllbrdIngress.Run(&ebpf.RunOptions{Data: frame, Context: in, ContextOut: &out})
	if errors.Is(err, unix.EINVAL) && len(frame) > testRunFrameMax {
		return Result{}, fmt.Errorf("%w: %d bytes: %w", ErrFrameSize, len(frame), err)
	}
	if err != nil {
		return Result{}, fmt.Errorf("bpfpath: BPF_PROG_TEST_RUN: %w", err)
	}
	r := out.result()
	if ret != tcActUnspec {
		return r, fmt.Errorf("bpfpath: the program returned %d, want TC_ACT_UNSPEC", int32(ret))
	}
	if _, ok := statusNames[r.Status]; !ok {
		return r, fmt.Errorf("bpfpath: the program reported status %d: not one it writes", r.Status)
	}
	return r, nil
}

// testRunRefuses reports whether BPF_PROG_TEST_RUN refuses frame for
// being short (see ErrFrameSize).
func testRunRefuses(frame []byte) bool {
	if len(frame) < ethHeaderLen {
		return true
	}
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case etherTypeIPv4:
		return len(frame) < ethHeaderLen+ipv4MinHeaderLen
	case etherTypeIPv6:
		return len(frame) < ethHeaderLen+ipv6HeaderLen
	}
	return false
}

// Close releases the program and its maps.
func (d *Datapath) Close() error {
	if err := d.objs.Close(); err != nil {
		return fmt.Errorf("bpfpath: %w", err)
	}
	return nil
}

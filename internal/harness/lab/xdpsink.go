package lab

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// XDPSink counts and drops, at XDP in driver (native) mode, every IPv4 or
// IPv6 UDP frame an interface receives; everything else (ARP, ICMPv6
// neighbour discovery, ICMP, TCP, VLAN-tagged frames, IPv6 with extension
// headers before UDP, frames too short for their IP header, ...) passes to
// the stack unchanged. A receiver that drops at the earliest point costs
// next to nothing, so in a benchmark the load balancer in front of it is the
// bottleneck, not the target's stack.
//
// A frame is UDP when its Ethernet type (untagged) is 0x0800 and its IPv4
// protocol byte (frame offset 23) is 17, whatever the header length and
// fragment offset (a non-first fragment counts too), or when its Ethernet
// type is 0x86DD and its IPv6 next header (offset 20) is 17.
//
// The sink is an XDP link held by this process: Close, or the process's
// death, detaches it. Its methods are safe for concurrent use.
type XDPSink struct {
	node, ifname string

	mu     sync.Mutex
	prog   *ebpf.Program
	count  *ebpf.Map // per-CPU array, one uint64 at key 0
	link   link.Link
	closed bool
}

// InstallXDPSink attaches a new sink to the interface ifname of the lab
// node node, in driver mode only (link.XDPDriverMode): veth supports it;
// an interface whose driver does not (lo, a bridge, ...) is a wrapped error
// that says so, never a silent fallback to generic mode, which would
// measure the stack instead.
//
// Being attached in driver mode on a veth is also the point of the sink:
// it enables the veth's NAPI, and only then can an XDP program elsewhere
// XDP_REDIRECT frames out of its peer into it (the peer's ndo_xdp_xmit
// fills this veth's receive ring), as the load balancer's XDP datapath
// does; without it such a redirect fails (ENXIO) and the datapath must
// take a slower path or lose the frame.
//
// The lab closes every sink it installed when it closes, so a failed
// benchmark leaves nothing attached.
func (l *Lab) InstallXDPSink(node, ifname string) (*XDPSink, error) {
	s := &XDPSink{node: node, ifname: ifname}
	if err := s.load(); err != nil {
		s.Close()
		return nil, err
	}
	err := l.Do(node, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		lk, err := link.AttachXDP(link.XDPOptions{Program: s.prog, Interface: ifc.Index, Flags: link.XDPDriverMode})
		if err != nil {
			return fmt.Errorf("attaching XDP in driver mode (no generic fallback): %w", err)
		}
		s.link = lk
		return nil
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("lab: XDP sink on %s %s: %w", node, ifname, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed { // Close took its list already: nobody else would close s
		s.Close()
		return nil, fmt.Errorf("lab: XDP sink on %s %s: lab is closed", node, ifname)
	}
	l.sinks = append(l.sinks, s)
	return s, nil
}

// load creates the counter map and the program.
func (s *XDPSink) load() error {
	var err error
	s.count, err = ebpf.NewMap(&ebpf.MapSpec{Name: "sink_count", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return fmt.Errorf("lab: XDP sink: counter map: %w", err)
	}
	s.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "sllbrd_sink", Type: ebpf.XDP, License: "MIT", Instructions: sinkProgram(s.count.FD())})
	if err != nil {
		return fmt.Errorf("lab: XDP sink: loading the program: %w", err)
	}
	return nil
}

// sinkProgram is the sink's XDP program, counting into the map countFD.
func sinkProgram(countFD int) asm.Instructions {
	// XDP verdicts (enum xdp_action).
	const (
		xdpDrop = 1
		xdpPass = 2
	)
	// Frame offsets and lengths the program checks.
	const (
		ethHeaderLen  = 14
		ethTypeOffset = 12
		ipv4HeaderLen = 20
		ipv6HeaderLen = 40
		ipv4ProtoOff  = ethHeaderLen + 9 // protocol byte of the IPv4 header
		ipv6NextOff   = ethHeaderLen + 6 // next header byte of the IPv6 header
		ethTypeIPv4   = 0x0800
		ethTypeIPv6   = 0x86DD
		protoUDP      = 17
	)
	return asm.Instructions{
		// R1 is the struct xdp_md: data at 0, data_end at 4 (32-bit).
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // R2 = data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // R3 = data_end
		// Ethernet and IPv4 headers: the shortest frame of interest.
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, ethHeaderLen+ipv4HeaderLen),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		// Ethernet type, in network order: byte-swapped to the host's
		// (be16 is its own inverse) to compare with constants.
		asm.LoadMem(asm.R5, asm.R2, ethTypeOffset, asm.Half),
		asm.HostTo(asm.BE, asm.R5, asm.Half),
		asm.JEq.Imm(asm.R5, ethTypeIPv4, "ipv4"),
		asm.JNE.Imm(asm.R5, ethTypeIPv6, "pass"),
		// IPv6: the verifier needs the whole fixed header in bounds.
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, ethHeaderLen+ipv6HeaderLen),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, ipv6NextOff, asm.Byte),
		asm.JEq.Imm(asm.R5, protoUDP, "count"),
		asm.Ja.Label("pass"),
		asm.LoadMem(asm.R5, asm.R2, ipv4ProtoOff, asm.Byte).WithSymbol("ipv4"),
		asm.JNE.Imm(asm.R5, protoUDP, "pass"),
		// count: key 0 on the stack, R2 pointing at it, R1 the map.
		asm.StoreImm(asm.RFP, -4, 0, asm.Word).WithSymbol("count"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, countFD),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"), // never for an array's key 0; the verifier wants the check
		// This CPU's own counter: a plain add, no atomic needed.
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol("drop"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
	}
}

// Count is the number of frames the sink dropped so far, summed over CPUs.
// After Close it is an error.
func (s *XDPSink) Count() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("lab: XDP sink on %s %s: closed", s.node, s.ifname)
	}
	var perCPU []uint64
	if err := s.count.Lookup(uint32(0), &perCPU); err != nil {
		return 0, fmt.Errorf("lab: XDP sink on %s %s: reading the counter: %w", s.node, s.ifname, err)
	}
	var sum uint64
	for _, n := range perCPU {
		sum += n
	}
	return sum, nil
}

// isClosed reports whether Close has run.
func (s *XDPSink) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close detaches the program and frees it and its map; frames pass to the
// stack again. It is idempotent. An interface deleted meanwhile (its
// namespace gone) is no error: the kernel detached the program then.
func (s *XDPSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.link != nil {
		if err := s.link.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detaching: %w", err))
		}
	}
	if s.prog != nil {
		errs = append(errs, s.prog.Close())
	}
	if s.count != nil {
		errs = append(errs, s.count.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab: XDP sink on %s %s: %w", s.node, s.ifname, err)
	}
	return nil
}

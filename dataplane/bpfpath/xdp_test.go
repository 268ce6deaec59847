package bpfpath

import (
	"bytes"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// XDP verdicts (enum xdp_action).
const (
	xdpPass     = 2
	xdpRedirect = 4
)

// xdpSrcMAC is the interface MAC the XDP tests' next hops have; slotMAC a
// slot's next hop's MAC, so that a redirected frame names its slot.
var xdpSrcMAC = net.HardwareAddr{2, 0, 0x5e, 0xff, 0xff, 0xff}

func slotMAC(slot int) net.HardwareAddr { return net.HardwareAddr{2, 0, 0x5e, 0, 0, byte(slot)} }

// xdpHopsIfindex is the interface of the XDP tests' next hops: the
// loopback device, which takes no XDP frames (no ndo_xdp_xmit), so a
// driver-mode XDP program redirects nothing to it.
const xdpHopsIfindex = 1

// xdpSetup loads and programs oneService (M 251, 10 slots) for the XDP
// tests: slots 0 to 7 have next hops with MACs, slot 8 one without
// (the tc program forwards its packets), slot 9 none; MTU 1500.
func xdpSetup(t *testing.T) *Datapath {
	d, _ := loadOneService(t)
	var hops []NextHop
	for slot := range 9 {
		for _, via := range []netip.Addr{netip.AddrFrom4([4]byte{10, 9, 0, byte(slot)}), netip.AddrFrom16([16]byte{0xfd, 9, 15: byte(slot)})} {
			h := NextHop{Mark: testMark(slot), Via: via, Ifindex: xdpHopsIfindex, MTU: 1500}
			if slot < 8 {
				h.MAC, h.SrcMAC = slotMAC(slot), xdpSrcMAC
			}
			hops = append(hops, h)
		}
	}
	if err := d.SetNextHops(hops); err != nil {
		t.Fatal(err)
	}
	return d
}

// setXDPInterface writes the XDP program's entry for the device
// BPF_PROG_TEST_RUN runs it on (the loopback device, whose MAC is zero),
// as AttachXDP would in mode.
func setXDPInterface(t *testing.T, d *Datapath, mode XDPMode) {
	t.Helper()
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	var iface ingressXdpIface
	if mode == XDPGeneric {
		iface.Flags = xdpIfaceGeneric
	}
	if err := d.objs.XdpIfaces.Put(uint32(lo.Index), iface); err != nil {
		t.Fatal(err)
	}
}

// runXDP runs frame through the XDP program as received on the loopback
// device and returns its verdict and the frame after it.
func runXDP(t testing.TB, d *Datapath, frame []byte) (uint32, []byte) {
	t.Helper()
	opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256)}
	ret, err := d.objs.SllbrdXdp.Run(opts)
	if err != nil {
		t.Fatalf("BPF_PROG_TEST_RUN (XDP): %v", err)
	}
	return ret, opts.DataOut
}

// xdpFrames draws the differential test's frames: the parser's (decided,
// punted, malformed, mutilated), most of them addressed to the device at
// layer 2; UDP with every TTL; from martian sources; and around the MTU.
func xdpFrames(rng *rand.Rand, n int) [][]byte {
	g := frameGen{rng}
	var out [][]byte
	for len(out) < n {
		switch rng.IntN(4) {
		case 0, 1:
			f := g.next().frame
			if len(f) >= 14 && rng.IntN(5) != 0 {
				clear(f[0:6]) // to this host
			}
			out = append(out, f)
		case 2:
			src := netip.AddrFrom4([4]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), 0, 1})
			dst := testVIP4
			if rng.IntN(2) == 0 {
				src, dst = netip.AddrFrom16([16]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), 15: 1}), testVIP6
			}
			out = append(out, hostFrame(netip.AddrPortFrom(src, uint16(rng.Uint32())), netip.AddrPortFrom(dst, 53), uint8(rng.IntN(256)), uint16(rng.Uint32()), 4*rng.IntN(11)))
		default:
			src, dst := netip.AddrFrom4([4]byte{11, byte(rng.IntN(256)), byte(rng.IntN(256)), 1}), testVIP4
			if rng.IntN(2) == 0 {
				src, dst = netip.AddrFrom16([16]byte{0xfd, 11, 2: byte(rng.IntN(256)), 15: 1}), testVIP6
			}
			proto := []uint8{protoUDP, protoTCP}[rng.IntN(2)]
			out = append(out, sizedFrame(proto, netip.AddrPortFrom(src, uint16(rng.Uint32())), netip.AddrPortFrom(dst, 80), 64, 1490+rng.IntN(20), 0, rng.IntN(2) == 0))
		}
	}
	return out
}

// TestIntegrationXDPMatchesTC runs random frames through the XDP program
// and, when it passes them, through the tc program of the same Datapath,
// as the kernel does, and each also through the tc program of a second
// Datapath alone. The XDP program redirects exactly the frames the tc
// program alone redirects to a next hop with MACs, to the same endpoint
// (the frame's new MAC names its slot), and the frame is the tc program's,
// byte for byte, but the Ethernet addresses; it passes every other frame
// unchanged. The counters of the two Datapaths agree: every route and
// endpoint counter equal, the redirects of the tc program alone those of
// both programs, every other action equal. In driver mode, to an
// interface that takes no XDP frames, it redirects nothing.
func TestIntegrationXDPMatchesTC(t *testing.T) {
	require.Root(t)
	d := xdpSetup(t)
	ref := xdpSetup(t) // the tc program alone
	setXDPInterface(t, d, XDPGeneric)
	frames := xdpFrames(rand.New(rand.NewPCG(7, 8)), 6000)
	xdpRedirects, passedToTC, tcRedirects, refused := 0, 0, 0, 0
	for _, in := range frames {
		if testRunRefuses(in) {
			refused++
			continue
		}
		alone := runOnLink(t, ref, bytes.Clone(in))
		verdict, out := runXDP(t, d, bytes.Clone(in))
		if alone.verdict == tcActRedirect {
			tcRedirects++
		}
		withMAC := alone.verdict == tcActRedirect && alone.result.Slot < 8
		switch {
		case verdict == xdpRedirect && withMAC:
			xdpRedirects++
			want := bytes.Clone(alone.frame[:len(in)])
			copy(want[0:6], slotMAC(int(alone.result.Slot)))
			copy(want[6:12], xdpSrcMAC)
			if !bytes.Equal(out, want) {
				t.Fatalf("frame %x: XDP wrote\n%x\nwant the tc program's with the next hop's MACs\n%x", in, out, want)
			}
		case verdict == xdpPass && !withMAC:
			if !bytes.Equal(out, in) {
				t.Fatalf("frame %x: passed, but changed to %x", in, out)
			}
			passedToTC++
			runOnLink(t, d, in)
		default:
			t.Fatalf("frame %x: XDP verdict %d; the tc program alone: verdict %d, %+v", in, verdict, alone.verdict, alone.result)
		}
	}
	got, want := mustCounters(t, d), mustCounters(t, ref)
	if len(got.Routes) != 1 || len(got.Endpoints) != 20 {
		t.Errorf("%d route and %d endpoint counters, want 1 and 20", len(got.Routes), len(got.Endpoints))
	}
	for l, c := range want.Routes {
		if got.Routes[l] != c {
			t.Errorf("route %v: %+v with XDP, %+v by the tc program alone", l, got.Routes[l], c)
		}
	}
	for l, c := range want.Endpoints {
		if got.Endpoints[l] != c {
			t.Errorf("endpoint %+v: %+v with XDP, %+v by the tc program alone", l, got.Endpoints[l], c)
		}
	}
	both := got.Actions
	both[ActionRedirect].Packets += both[ActionXDPRedirect].Packets
	both[ActionRedirect].Bytes += both[ActionXDPRedirect].Bytes
	both[ActionXDPRedirect] = Count{}
	if both != want.Actions || got.Actions[ActionXDPRedirect].Packets != uint64(xdpRedirects) {
		t.Errorf("actions with XDP %+v (redirects of both summed: %+v), by the tc program alone %+v; want them equal, %d XDP redirects",
			got.Actions, both, want.Actions, xdpRedirects)
	}
	if xdpRedirects < len(frames)/10 || tcRedirects == xdpRedirects {
		t.Fatalf("%d XDP redirects, %d of the tc program alone: the test checks too little", xdpRedirects, tcRedirects)
	}
	t.Logf("%d frames (%d more too short to run): %d redirected by XDP, %d passed (of them %d redirected by the tc program); actions %+v",
		len(frames)-refused, refused, xdpRedirects, passedToTC, tcRedirects-xdpRedirects, got.Actions)

	// Driver mode: the next hops' interface (lo) takes no XDP frames.
	setXDPInterface(t, d, XDPDriver)
	for _, in := range frames[:1000] {
		if testRunRefuses(in) {
			continue
		}
		if verdict, out := runXDP(t, d, bytes.Clone(in)); verdict != xdpPass || !bytes.Equal(out, in) {
			t.Fatalf("driver mode, frame %x: verdict %d, %x; want it passed unchanged", in, verdict, out)
		}
	}
}

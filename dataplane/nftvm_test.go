package dataplane

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/maglev"
)

// nftVM evaluates the kernel path's rules (nft.FastPath) on a packet the
// way nf_tables does, for the expressions the compiler emits: a test model
// of the kernel (TestIntegrationKernelPathAgreesWithUserspace checks the
// real one), so that random configurations can be checked by the thousand.
// It models what prerouting does in the kernel path (package nft): the
// dispatch maps jump to the VIP's chain, and what comes back is queued.
type nftVM struct {
	fp       *nft.FastPath
	chains   map[string][]nft.Rule
	sets     map[string]*nft.Set
	counters map[string]int
}

func newNFTVM(fp *nft.FastPath) *nftVM {
	vm := &nftVM{fp: fp, chains: map[string][]nft.Rule{}, sets: map[string]*nft.Set{}, counters: map[string]int{}}
	for _, c := range fp.Chains {
		vm.chains[c.Name] = c.Rules
	}
	for i := range fp.Sets {
		vm.sets[fp.Sets[i].Name] = &fp.Sets[i]
	}
	return vm
}

// vmPacket is a packet as the kernel's pktinfo sees it.
type vmPacket struct {
	b     []byte // the IP packet, cut to its stated length
	thoff int
	proto uint8
}

// run returns the mark the kernel path sets, or decided=false when the
// packet is queued.
func (vm *nftVM) run(b []byte) (mark uint32, decided bool, err error) {
	p, ok := vmParse(b)
	if !ok {
		return 0, false, nil
	}
	dst := netip.AddrFrom4([4]byte(p.b[16:20]))
	if p.b[0]>>4 == 6 {
		dst = netip.AddrFrom16([16]byte(p.b[24:40]))
	}
	for _, d := range vm.fp.Dispatch {
		if d.VIP == dst {
			var regs vmRegs
			v, err := vm.chain(d.Chain, p, &regs, 0)
			if err != nil || v != verdictAccept {
				return 0, false, err
			}
			return regs.mark, true, nil
		}
	}
	return 0, false, nil
}

// vmParse finds the transport header as nf_tables does, for what the
// kernel path's rules read of it: IPv4 at IHL (fragments included: the
// rules leave them alone before reading it), IPv6 right after the fixed
// header (the rules leave packets with extension headers alone before
// reading it).
func vmParse(b []byte) (vmPacket, bool) {
	if len(b) < 20 {
		return vmPacket{}, false
	}
	if b[0]>>4 == 4 {
		ihl, total := int(b[0]&0xf)*4, int(binary.BigEndian.Uint16(b[2:4]))
		if ihl < 20 || total < ihl || total > len(b) {
			return vmPacket{}, false
		}
		return vmPacket{b: b[:total], thoff: ihl, proto: b[9]}, true
	}
	if len(b) < 40 {
		return vmPacket{}, false
	}
	total := 40 + int(binary.BigEndian.Uint16(b[4:6]))
	if total > len(b) {
		return vmPacket{}, false
	}
	return vmPacket{b: b[:total], thoff: 40, proto: b[6]}, true
}

type vmVerdict int

const (
	verdictNone   vmVerdict = iota // fell off the chain
	verdictAccept                  // accept
	verdictReturn                  // return to the caller
)

// vmRegs is the register file: NFT_REG32_00 is data[0:4], and register 1
// (16 bytes) is data[0:16].
type vmRegs struct {
	data [64]byte
	mark uint32
}

func regOffset(r uint32) int {
	if r >= unix.NFT_REG32_00 {
		return int(r-unix.NFT_REG32_00) * 4
	}
	return int(r-1) * 16
}

// chain runs a chain; goto is modelled by running the target and then
// ending the caller, jump by running it and going on.
func (vm *nftVM) chain(name string, p vmPacket, regs *vmRegs, depth int) (vmVerdict, error) {
	rules, ok := vm.chains[name]
	if !ok || depth > 16 {
		return 0, fmt.Errorf("chain %q: unknown or too deep", name)
	}
rules:
	for _, r := range rules {
		for _, e := range r.Exprs {
			cont, v, err := vm.expr(e, p, regs, depth)
			if err != nil {
				return 0, fmt.Errorf("chain %s, rule %q: %w", name, r.Comment, err)
			}
			if v != verdictNone {
				return v, nil
			}
			if !cont {
				continue rules // NFT_BREAK: the next rule
			}
		}
	}
	return verdictNone, nil
}

// expr evaluates one expression: cont is false on NFT_BREAK, v is set when
// the chain ends.
func (vm *nftVM) expr(e expr.Any, p vmPacket, regs *vmRegs, depth int) (cont bool, v vmVerdict, err error) {
	switch x := e.(type) {
	case *expr.Payload:
		off := int(x.Offset)
		if x.Base == expr.PayloadBaseTransportHeader {
			off += p.thoff
		} else if x.Base != expr.PayloadBaseNetworkHeader {
			return false, 0, fmt.Errorf("payload base %d", x.Base)
		}
		if off+int(x.Len) > len(p.b) {
			return false, 0, nil
		}
		dst := regs.data[regOffset(x.DestRegister):]
		if x.Len%4 != 0 {
			clear(dst[x.Len/4*4 : x.Len/4*4+4])
		}
		copy(dst[:x.Len], p.b[off:])
	case *expr.Immediate:
		copy(regs.data[regOffset(x.Register):], x.Data)
	case *expr.Bitwise:
		src, dst := regs.data[regOffset(x.SourceRegister):], regs.data[regOffset(x.DestRegister):]
		for i := range int(x.Len) {
			dst[i] = src[i]&x.Mask[i] ^ x.Xor[i]
		}
	case *expr.Cmp:
		eq := bytes.Equal(regs.data[regOffset(x.Register):][:len(x.Data)], x.Data)
		if (x.Op == expr.CmpOpEq) != eq {
			return false, 0, nil
		}
	case *expr.Range:
		val := regs.data[regOffset(x.Register):][:len(x.FromData)]
		if bytes.Compare(val, x.FromData) < 0 || bytes.Compare(val, x.ToData) > 0 {
			return false, 0, nil
		}
	case *expr.Meta:
		if x.Key != expr.MetaKeyMARK {
			return false, 0, fmt.Errorf("meta %v", x.Key)
		}
		if x.SourceRegister {
			regs.mark = binary.NativeEndian.Uint32(regs.data[regOffset(x.Register):])
		} else {
			binary.NativeEndian.PutUint32(regs.data[regOffset(x.Register):], regs.mark)
		}
	case *expr.Objref:
		vm.counters[x.Name]++
	case *expr.Hash:
		h := maglev.JHash(regs.data[regOffset(x.SourceRegister):][:x.Length], x.Seed)
		binary.NativeEndian.PutUint32(regs.data[regOffset(x.DestRegister):], maglev.ReciprocalScale(h, x.Modulus)+x.Offset)
	case *expr.Lookup:
		return vm.lookup(x, p, regs, depth)
	case *expr.Verdict:
		return vm.verdict(x.Kind, x.Chain, p, regs, depth)
	default:
		return false, 0, fmt.Errorf("expression %T", e)
	}
	return true, verdictNone, nil
}

func (vm *nftVM) lookup(x *expr.Lookup, p vmPacket, regs *vmRegs, depth int) (bool, vmVerdict, error) {
	s, ok := vm.sets[x.SetName]
	if !ok {
		return false, 0, fmt.Errorf("set %q", x.SetName)
	}
	key := regs.data[regOffset(x.SourceRegister):]
	switch s.Kind {
	case nft.PrefixSet4, nft.PrefixSet6:
		n := 4
		if s.Kind == nft.PrefixSet6 {
			n = 16
		}
		a, _ := netip.AddrFromSlice(key[:n])
		return slices.ContainsFunc(s.Prefixes, func(pf netip.Prefix) bool { return pf.Contains(a) }), verdictNone, nil
	case nft.PortSet:
		port := binary.BigEndian.Uint16(key)
		return slices.ContainsFunc(s.Ports, func(r nft.PortRange) bool { return r.From <= port && port <= r.To }), verdictNone, nil
	}
	k := binary.NativeEndian.Uint32(key)
	if s.Kind == nft.MarkMap {
		chain, ok := s.Goto[k]
		if !ok || !x.IsDestRegSet || x.DestRegister != 0 {
			return false, 0, nil
		}
		return vm.verdict(expr.VerdictGoto, chain, p, regs, depth)
	}
	if int(k) >= len(s.Marks) || !x.IsDestRegSet || x.DestRegister == 0 {
		return false, 0, nil
	}
	binary.NativeEndian.PutUint32(regs.data[regOffset(x.DestRegister):], s.Marks[k])
	return true, verdictNone, nil
}

func (vm *nftVM) verdict(kind expr.VerdictKind, chain string, p vmPacket, regs *vmRegs, depth int) (bool, vmVerdict, error) {
	switch kind {
	case expr.VerdictAccept:
		return false, verdictAccept, nil
	case expr.VerdictReturn:
		return false, verdictReturn, nil
	case expr.VerdictGoto:
		v, err := vm.chain(chain, p, regs, depth+1)
		if v == verdictNone {
			v = verdictReturn // the goto's caller ends with it
		}
		return false, v, err
	}
	return false, 0, fmt.Errorf("verdict %d", kind)
}

package nft

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// Payload offsets ProbeKernelPath tries: what kernels since 6.2 accept in a
// payload expression, and what every kernel accepts.
const (
	MaxPayloadOffsetWide   = 0xffff
	MaxPayloadOffsetLegacy = 0xff
)

// ProbeKernelPath checks, in a transaction that adds and deletes a scratch
// table (nothing remains), that the kernel has what the kernel path uses:
// the jhash expression, data and verdict maps, counter objects and payload
// loads.
// It returns the largest transport-header offset a payload expression may
// read, or an error when the kernel path cannot work here.
func ProbeKernelPath(c Conn) (maxPayloadOffset int, err error) {
	var errs []error
	for _, off := range []int{MaxPayloadOffsetWide, MaxPayloadOffsetLegacy} {
		err := tryKernelPath(c, uint32(off))
		if err == nil {
			return off, nil
		}
		errs = append(errs, fmt.Errorf("payload offset %d: %w", off, err))
	}
	return 0, fmt.Errorf("the kernel refuses the kernel path's rules (jhash, data and verdict maps, counter objects): %v", errs)
}

// tryKernelPath commits the probe's transaction; a failure while queueing
// it discards what was queued (discard), so that the next try starts from
// an empty queue.
func tryKernelPath(c Conn, offset uint32) error {
	gen, err := c.GetGen()
	if err != nil {
		return fmt.Errorf("read the ruleset generation: %w", err)
	}
	t := &nftables.Table{Name: probeTableName, Family: nftables.TableFamilyINet}
	c.AddTable(t)
	c.AddObj(counterObj(t, "probe"))
	target := c.AddChain(&nftables.Chain{Name: "target", Table: t})
	ch := c.AddChain(&nftables.Chain{Name: "probe", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityRaw})
	entries := &Set{Name: "probe", Kind: EntryMap, Marks: []uint32{1, 1}}
	marks := &Set{Name: "probe-marks", Kind: MarkMap, Goto: map[uint32]string{1: target.Name}}
	for _, s := range []*Set{entries, marks} {
		if err := c.AddSet(s.nftSet(t), s.elements()); err != nil {
			discard(c, gen.ID)
			return fmt.Errorf("add set %s: %w", s.Name, err)
		}
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
		load(expr.PayloadBaseTransportHeader, offset, 1),
		&expr.Payload{DestRegister: reg32(0), Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Objref{Type: int(nftables.ObjTypeCounter), Name: "probe"},
		&expr.Hash{SourceRegister: reg32(0), DestRegister: reg32(0), Length: 4, Modulus: 2, Seed: 1, Type: expr.HashTypeJenkins},
		&expr.Lookup{SourceRegister: reg32(0), SetName: entries.Name, IsDestRegSet: true, DestRegister: reg32(0)},
		&expr.Lookup{SourceRegister: reg32(0), SetName: marks.Name, IsDestRegSet: true, DestRegister: 0},
	}})
	c.DelTable(t)
	return c.Flush()
}

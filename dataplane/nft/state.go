package nft

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// tableState is what our table holds, as far as Program compares it: sets
// with their elements, chains with their rules' comments, counter names.
type tableState struct {
	sets     map[string]*setState
	chains   map[string]*chainState
	counters map[string]bool
}

type setState struct {
	set *nftables.Set
	// src is the fast path's description of what we committed (nil for a
	// set read from the kernel, and for base sets); elems is then made
	// from it when needed.
	src   *Set
	elems map[string]string // element identity (key, flags) -> data
}

// elements returns the set's elements by identity.
func (s *setState) elements() map[string]string {
	if s.elems == nil && s.src != nil {
		s.elems = elementMap(s.src.elements())
	}
	return s.elems
}

type chainState struct {
	chain    *nftables.Chain
	comments []string
}

// state is what d makes of the table once committed.
func (d *desired) state() *tableState {
	st := &tableState{sets: map[string]*setState{}, chains: map[string]*chainState{}, counters: map[string]bool{}}
	for _, s := range d.sets {
		if s.src != nil {
			st.sets[s.set.Name] = &setState{set: s.set, src: s.src}
		} else {
			st.sets[s.set.Name] = &setState{set: s.set, elems: elementMap(s.elements())}
		}
	}
	for _, cw := range d.chains {
		cs := &chainState{chain: cw.chain}
		for _, r := range cw.rules {
			cs.comments = append(cs.comments, r.comment)
		}
		st.chains[cw.chain.Name] = cs
	}
	for _, c := range d.counters {
		st.counters[c] = true
	}
	return st
}

// readState reads our table from the kernel; nil when it does not exist.
func readState(c Conn, t *nftables.Table) (*tableState, error) {
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	if !slices.ContainsFunc(tables, func(x *nftables.Table) bool { return x.Name == t.Name }) {
		return nil, nil
	}
	st := &tableState{sets: map[string]*setState{}, chains: map[string]*chainState{}, counters: map[string]bool{}}
	sets, err := c.GetSets(t)
	if err != nil {
		return nil, fmt.Errorf("list sets: %w", err)
	}
	for _, s := range sets {
		elems, err := c.GetSetElements(s)
		if err != nil {
			return nil, fmt.Errorf("list elements of set %s: %w", s.Name, err)
		}
		st.sets[s.Name] = &setState{set: s, elems: elementMap(elems)}
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("list chains: %w", err)
	}
	for _, ch := range chains {
		if ch.Table.Name != t.Name {
			continue
		}
		rules, err := c.GetRules(t, ch)
		if err != nil {
			return nil, fmt.Errorf("list rules of chain %s: %w", ch.Name, err)
		}
		cs := &chainState{chain: ch}
		for _, r := range rules {
			comment, _ := userdata.GetString(r.UserData, userdata.TypeComment)
			cs.comments = append(cs.comments, comment)
		}
		st.chains[ch.Name] = cs
	}
	objs, err := c.GetNamedObjects(t)
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	for _, o := range objs {
		if n, ok := o.(*nftables.NamedObj); ok && n.Type == nftables.ObjTypeCounter {
			st.counters[n.Name] = true
		}
	}
	return st, nil
}

// elementMap indexes elements by identity (key and interval flags) with
// their data (a verdict, a value or nothing) as strings.
func elementMap(elems []nftables.SetElement) map[string]string {
	out := make(map[string]string, len(elems))
	for _, e := range elems {
		out[elementIdentity(e)] = elementData(e)
	}
	return out
}

func elementIdentity(e nftables.SetElement) string {
	id := hex.EncodeToString(e.Key)
	if e.IntervalEnd {
		id += " end"
	}
	if e.IntervalOpen {
		id += " open"
	}
	return id
}

// elementData renders a verdict as "goto chain", "jump chain" or the
// verdict kind; a verdict read back from the kernel arrives as the raw
// nested attributes of struct nft_verdict in Val.
func elementData(e nftables.SetElement) string {
	v := e.VerdictData
	if v == nil && len(e.Val) > 0 {
		if parsed, ok := parseVerdict(e.Val); ok {
			v = parsed
		}
	}
	if v == nil {
		return hex.EncodeToString(e.Val)
	}
	switch v.Kind {
	case expr.VerdictGoto:
		return "goto " + v.Chain
	case expr.VerdictJump:
		return "jump " + v.Chain
	}
	return fmt.Sprintf("verdict %d", v.Kind)
}

// parseVerdict decodes NFTA_VERDICT_CODE and NFTA_VERDICT_CHAIN.
func parseVerdict(b []byte) (*expr.Verdict, bool) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, false
	}
	ad.ByteOrder = binary.BigEndian
	v, code := &expr.Verdict{}, false
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_VERDICT_CODE:
			v.Kind, code = expr.VerdictKind(int32(ad.Uint32())), true
		case unix.NFTA_VERDICT_CHAIN:
			v.Chain = ad.String()
		}
	}
	return v, code && ad.Err() == nil
}

// sameSetType reports whether a set of the kernel can hold want's
// elements as they are (key, data, flags).
func sameSetType(got, want *nftables.Set) bool {
	return got.KeyType.Name == want.KeyType.Name && got.IsMap == want.IsMap &&
		(!want.IsMap || got.DataType.Name == want.DataType.Name) &&
		got.Interval == want.Interval && got.Concatenation == want.Concatenation &&
		got.Size == want.Size && !got.Constant && !got.HasTimeout
}

// elementsDiff returns the elements of want whose identity is missing from
// or has other data in got (to add), and the identities of got that want
// lacks or has with other data (to delete).
func elementsDiff(got map[string]string, want []nftables.SetElement) (add []nftables.SetElement, del []string) {
	wanted := make(map[string]bool, len(want))
	for _, e := range want {
		id := elementIdentity(e)
		wanted[id] = true
		if data, ok := got[id]; !ok || data != elementData(e) {
			add = append(add, e)
			if ok {
				del = append(del, id)
			}
		}
	}
	for id := range got {
		if !wanted[id] {
			del = append(del, id)
		}
	}
	slices.Sort(del)
	return add, del
}

// keyOf turns the identity of an element of a set without intervals back
// into the element, to delete it.
func keyOf(id string) nftables.SetElement {
	key, _ := hex.DecodeString(id)
	return nftables.SetElement{Key: key}
}

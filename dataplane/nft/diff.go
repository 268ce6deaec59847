package nft

import (
	"slices"

	"github.com/google/nftables"
)

// compatible reports whether current can be turned into want piece by
// piece: the base chains (the hooked ones) are exactly want's, with the
// same rules, and every set of want that exists has a type that holds
// want's elements. Otherwise the table is rebuilt.
func compatible(want *desired, current *tableState) bool {
	for _, cw := range want.chains {
		if !cw.base {
			continue
		}
		got, ok := current.chains[cw.chain.Name]
		if !ok || !sameChain(got.chain, cw.chain) || !slices.Equal(got.comments, comments(cw)) {
			return false
		}
	}
	for name, got := range current.chains {
		if got.chain.Hooknum != nil && !slices.ContainsFunc(want.chains, func(cw *chainWant) bool { return cw.base && cw.chain.Name == name }) {
			return false // a hooked chain we do not know
		}
	}
	for _, s := range want.sets {
		got, ok := current.sets[s.set.Name]
		if (s.base && !ok) || (ok && !sameSetType(got.set, s.set)) {
			return false
		}
	}
	return true
}

func comments(cw *chainWant) []string {
	out := make([]string, len(cw.rules))
	for i, r := range cw.rules {
		out[i] = r.comment
	}
	return out
}

// queueChanges queues on c, in an order the kernel accepts within one
// transaction, what turns the compatible current into want:
//
//  1. new counters, new chains (empty), new sets with their elements;
//  2. the element changes of existing sets: interval sets are flushed and
//     refilled when they differ, others lose and gain single elements;
//  3. the rules of chains that differ (flushed, then refilled) and of new
//     chains;
//  4. what want lacks: chains are flushed (dropping their references),
//     then sets, chains and counters deleted.
//
// It returns the number of operations queued.
func queueChanges(c Conn, want *desired, current *tableState) (int, error) {
	t := want.l.table
	ops := 0
	for _, name := range want.counters {
		if !current.counters[name] {
			c.AddObj(counterObj(t, name))
			ops++
		}
	}
	for _, cw := range want.chains {
		if _, ok := current.chains[cw.chain.Name]; !ok {
			c.AddChain(cw.chain)
			ops++
		}
	}
	for _, s := range want.sets {
		got, ok := current.sets[s.set.Name]
		if !ok {
			if err := c.AddSet(s.set, s.elements()); err != nil {
				return ops, err
			}
			ops++
			continue
		}
		n, err := queueElements(c, s, got)
		if err != nil {
			return ops, err
		}
		ops += n
	}
	for _, cw := range want.chains {
		got, ok := current.chains[cw.chain.Name]
		switch {
		case !ok:
		case slices.Equal(got.comments, comments(cw)):
			continue
		default:
			c.FlushChain(cw.chain)
		}
		want.addRules(c, cw)
		ops += 1 + len(cw.rules)
	}
	return ops + queueDeletions(c, want, current), nil
}

// setDelta is how an existing set differs from the wanted one, as far as
// what we committed tells without comparing elements.
type setDelta int

const (
	deltaElements setDelta = iota // unknown: compare the elements
	deltaNone                     // as committed
	deltaEntries                  // an entry map of the same size whose entries alone differ
)

// deltaOf classifies the change from got to s; for deltaEntries it
// returns the entries that map to other marks.
func deltaOf(s *setSpec, got *setState) (setDelta, EntryMapChange) {
	switch {
	case s.src == nil || got.src == nil:
		return deltaElements, EntryMapChange{}
	case s.src.sameContent(got.src):
		return deltaNone, EntryMapChange{}
	case s.src.Kind == EntryMap && got.src.Kind == EntryMap && len(s.src.Marks) == len(got.src.Marks):
		return deltaEntries, changedEntries(s.set.Name, got.src.Marks, s.src.Marks)
	}
	return deltaElements, EntryMapChange{}
}

// queueElements queues the element changes of one existing set.
func queueElements(c Conn, s *setSpec, got *setState) (int, error) {
	switch d, change := deltaOf(s, got); d {
	case deltaNone:
		return 0, nil
	case deltaEntries:
		return queueEntries(c, s, change)
	}
	add, del := elementsDiff(got.elements(), s.elements())
	if len(add) == 0 && len(del) == 0 {
		return 0, nil
	}
	if s.set.Interval {
		c.FlushSet(s.set)
		return 1, c.SetAddElements(s.set, s.elements())
	}
	if len(del) > 0 {
		keys := make([]nftables.SetElement, len(del))
		for i, id := range del {
			keys[i] = keyOf(id)
		}
		if err := c.SetDeleteElements(s.set, keys); err != nil {
			return 0, err
		}
	}
	if len(add) > 0 {
		if err := c.SetAddElements(s.set, add); err != nil {
			return 0, err
		}
	}
	return len(add) + len(del), nil
}

// queueEntries replaces the entries of an entry map that map to another
// mark than in the map we committed (same size): each is deleted and added
// again, in the same transaction. A change of one endpoint of N rewrites
// about M/N entries (entryBuilder shares their keys and data).
func queueEntries(c Conn, s *setSpec, changed EntryMapChange) (int, error) {
	if len(changed.Entries) == 0 {
		return 0, nil
	}
	b := newEntryBuilder(len(changed.Entries))
	add := make([]nftables.SetElement, len(changed.Entries))
	del := make([]nftables.SetElement, len(changed.Entries))
	for i, entry := range changed.Entries {
		add[i] = b.entry(entry, changed.Marks[i])
		del[i] = nftables.SetElement{Key: add[i].Key}
	}
	if err := c.SetDeleteElements(s.set, del); err != nil {
		return 0, err
	}
	return 2 * len(add), c.SetAddElements(s.set, add)
}

// queueDeletions queues the deletion of what current has and want lacks.
func queueDeletions(c Conn, want *desired, current *tableState) int {
	t := want.l.table
	ops := 0
	var chains []*nftables.Chain
	for _, name := range sortedKeys(current.chains) {
		if !slices.ContainsFunc(want.chains, func(cw *chainWant) bool { return cw.chain.Name == name }) {
			ch := &nftables.Chain{Name: name, Table: t}
			c.FlushChain(ch)
			chains = append(chains, ch)
		}
	}
	for _, name := range sortedKeys(current.sets) {
		if want.setByName(name) == nil {
			c.DelSet(&nftables.Set{Name: name, Table: t})
			ops++
		}
	}
	for _, ch := range chains {
		c.DelChain(ch)
		ops += 2
	}
	for _, name := range sortedKeys(current.counters) {
		if !slices.Contains(want.counters, name) {
			c.DeleteObject(counterObj(t, name))
			ops++
		}
	}
	return ops
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sameChain reports whether got has want's type, hook, priority and an
// accepting policy (regular chains have none of these).
func sameChain(got, want *nftables.Chain) bool {
	if want.Hooknum == nil {
		return got.Hooknum == nil
	}
	return got.Name == want.Name && got.Type == want.Type &&
		got.Hooknum != nil && *got.Hooknum == *want.Hooknum &&
		got.Priority != nil && *got.Priority == *want.Priority &&
		(got.Policy == nil || *got.Policy == nftables.ChainPolicyAccept)
}

// entryChanges returns the entries to rewrite when they are all that
// differs between want and the compatible current: the same counters,
// chains with the same rules, sets with the same elements, except entry
// maps (of unchanged size) whose entries map to other marks, as deltaOf tells
// from what we committed. ok is false when anything else differs, and for
// any difference in a table read back from the kernel (it has no record
// of what we committed).
func entryChanges(want *desired, current *tableState) (tx *EntryTx, ok bool) {
	if len(want.counters) != len(current.counters) || len(want.chains) != len(current.chains) || len(want.sets) != len(current.sets) {
		return nil, false
	}
	for _, name := range want.counters {
		if !current.counters[name] {
			return nil, false
		}
	}
	for _, cw := range want.chains {
		got, ok := current.chains[cw.chain.Name]
		if !ok || !slices.Equal(got.comments, comments(cw)) {
			return nil, false
		}
	}
	tx = &EntryTx{Table: want.l.table.Name}
	for _, s := range want.sets {
		got, ok := current.sets[s.set.Name]
		if !ok {
			return nil, false
		}
		switch d, change := deltaOf(s, got); d {
		case deltaEntries:
			tx.Maps = append(tx.Maps, change)
		case deltaElements:
			if add, del := elementsDiff(got.elements(), s.elements()); len(add) > 0 || len(del) > 0 {
				return nil, false
			}
		}
	}
	return tx, true
}

// changedEntries lists the entries of an entry map that map to another
// mark in want than in committed.
func changedEntries(set string, committed, want []uint32) EntryMapChange {
	c := EntryMapChange{Set: set}
	for i, mark := range want {
		if committed[i] != mark {
			c.Entries = append(c.Entries, uint32(i))
			c.Marks = append(c.Marks, mark)
		}
	}
	return c
}

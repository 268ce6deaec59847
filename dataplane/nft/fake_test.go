package nft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// fakeConn is an in-memory nftables with transactions: queued operations
// apply to a copy of the state that replaces the state only if all succeed.
// It checks what the kernel checks and the programmer's ordering relies
// on: references to chains, sets and counters must resolve when a rule or
// element is added, and what is referenced cannot be deleted.
type fakeConn struct {
	state      map[string]*fakeTable
	pending    []func(map[string]*fakeTable) error
	ops        []string // names of the operations of the last Flush
	flushErr   error    // returned by the next Flush
	race       bool     // someone else commits just before the next Flush
	rejectExpr func(expr.Any) bool
	gen        uint32
	reads      int // state reads (list calls) so far
	entryTxs   int // transactions committed through CommitEntries

	// failQueue makes the queueing calls that can fail (AddSet,
	// SetAddElements, SetDeleteElements; google/nftables fails them when
	// it cannot encode an element) return the error it returns for op,
	// without queueing. Like google/nftables the conn keeps the first
	// such error (queueErr): its next Flush returns it and commits
	// nothing; with forgetQueueErr it does not, as another Conn may not,
	// and its next Flush commits whatever is queued.
	failQueue      func(op string) error
	forgetQueueErr bool
	queueErr       error
}

type fakeTable struct {
	sets   map[string]*fakeSet
	chains []*nftables.Chain
	rules  map[string][]*nftables.Rule
	objs   map[string]bool
}

type fakeSet struct {
	set   *nftables.Set
	elems []nftables.SetElement
}

func newFakeConn() *fakeConn { return &fakeConn{state: map[string]*fakeTable{}, gen: 1} }

// queueFailure returns failQueue's error for op, keeping it as queueErr
// unless forgetQueueErr.
func (f *fakeConn) queueFailure(op string) error {
	if f.failQueue == nil {
		return nil
	}
	err := f.failQueue(op)
	if err != nil && f.queueErr == nil && !f.forgetQueueErr {
		f.queueErr = err
	}
	return err
}

func (f *fakeConn) queue(op string, fn func(map[string]*fakeTable) error) {
	f.pending = append(f.pending, func(s map[string]*fakeTable) error {
		f.ops = append(f.ops, op)
		return fn(s)
	})
}

func (t *fakeTable) clone() *fakeTable {
	c := &fakeTable{sets: map[string]*fakeSet{}, chains: slices.Clone(t.chains), rules: maps.Clone(t.rules), objs: maps.Clone(t.objs)}
	for k, s := range t.sets {
		c.sets[k] = &fakeSet{set: s.set, elems: slices.Clone(s.elems)}
	}
	return c
}

func (t *fakeTable) chain(name string) *nftables.Chain {
	for _, c := range t.chains {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// references lists what rules and map elements of t refer to: chains,
// sets and counters, as "chain x", "set x", "counter x".
func (t *fakeTable) references() map[string]bool {
	refs := map[string]bool{}
	for _, rules := range t.rules {
		for _, r := range rules {
			for _, e := range r.Exprs {
				for _, ref := range exprRefs(e) {
					refs[ref] = true
				}
			}
		}
	}
	for _, s := range t.sets {
		for _, e := range s.elems {
			if e.VerdictData != nil && e.VerdictData.Chain != "" {
				refs["chain "+e.VerdictData.Chain] = true
			}
		}
	}
	return refs
}

func exprRefs(e expr.Any) []string {
	switch x := e.(type) {
	case *expr.Lookup:
		return []string{"set " + x.SetName}
	case *expr.Verdict:
		if x.Chain != "" {
			return []string{"chain " + x.Chain}
		}
	case *expr.Objref:
		return []string{"counter " + x.Name}
	}
	return nil
}

func (t *fakeTable) resolves(ref string) bool {
	kind, name, _ := cutSpace(ref)
	switch kind {
	case "chain":
		return t.chain(name) != nil
	case "set":
		return t.sets[name] != nil
	}
	return t.objs[name]
}

func cutSpace(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func (f *fakeConn) AddTable(t *nftables.Table) *nftables.Table {
	f.queue("AddTable", func(s map[string]*fakeTable) error {
		if s[t.Name] == nil {
			s[t.Name] = &fakeTable{sets: map[string]*fakeSet{}, rules: map[string][]*nftables.Rule{}, objs: map[string]bool{}}
		}
		return nil
	})
	return t
}

func (f *fakeConn) DelTable(t *nftables.Table) {
	f.queue("DelTable", func(s map[string]*fakeTable) error {
		if s[t.Name] == nil {
			return errors.New("ENOENT table")
		}
		delete(s, t.Name)
		return nil
	})
}

func (f *fakeConn) AddChain(c *nftables.Chain) *nftables.Chain {
	f.queue("AddChain", func(s map[string]*fakeTable) error {
		t := s[c.Table.Name]
		if t == nil {
			return errors.New("ENOENT table of chain")
		}
		if t.chain(c.Name) != nil {
			return nil // as NLM_F_CREATE without EXCL
		}
		t.chains = append(t.chains, c)
		return nil
	})
	return c
}

func (f *fakeConn) FlushChain(c *nftables.Chain) {
	f.queue("FlushChain", func(s map[string]*fakeTable) error {
		t := s[c.Table.Name]
		if t == nil || t.chain(c.Name) == nil {
			return fmt.Errorf("ENOENT chain %s", c.Name)
		}
		delete(t.rules, c.Name)
		return nil
	})
}

func (f *fakeConn) DelChain(c *nftables.Chain) {
	f.queue("DelChain", func(s map[string]*fakeTable) error {
		t := s[c.Table.Name]
		if t == nil || t.chain(c.Name) == nil {
			return fmt.Errorf("ENOENT chain %s", c.Name)
		}
		if len(t.rules[c.Name]) > 0 || t.references()["chain "+c.Name] {
			return fmt.Errorf("EBUSY chain %s", c.Name)
		}
		t.chains = slices.DeleteFunc(t.chains, func(x *nftables.Chain) bool { return x.Name == c.Name })
		return nil
	})
}

func (f *fakeConn) AddSet(set *nftables.Set, vals []nftables.SetElement) error {
	if err := f.queueFailure("AddSet"); err != nil {
		return err
	}
	f.queue("AddSet", func(s map[string]*fakeTable) error {
		t := s[set.Table.Name]
		if t.sets[set.Name] != nil {
			return fmt.Errorf("EEXIST set %s", set.Name)
		}
		t.sets[set.Name] = &fakeSet{set: set}
		return addElems(t, set.Name, vals)
	})
	return nil
}

func addElems(t *fakeTable, name string, vals []nftables.SetElement) error {
	fs := t.sets[name]
	if fs == nil {
		return fmt.Errorf("ENOENT set %s", name)
	}
	for _, v := range vals {
		if v.VerdictData != nil && v.VerdictData.Chain != "" && t.chain(v.VerdictData.Chain) == nil {
			return fmt.Errorf("ENOENT chain %s of an element of %s", v.VerdictData.Chain, name)
		}
		if err := checkElementType(fs.set, v); err != nil {
			return err
		}
		id := elementIdentity(v)
		if i := slices.IndexFunc(fs.elems, func(e nftables.SetElement) bool { return elementIdentity(e) == id }); i >= 0 {
			if elementData(fs.elems[i]) != elementData(v) {
				return fmt.Errorf("EBUSY element %s of %s has other data", id, name)
			}
			continue
		}
		fs.elems = append(fs.elems, v)
	}
	return nil
}

func (f *fakeConn) FlushSet(set *nftables.Set) {
	f.queue("FlushSet", func(s map[string]*fakeTable) error {
		fs := s[set.Table.Name].sets[set.Name]
		if fs == nil {
			return fmt.Errorf("ENOENT set %s", set.Name)
		}
		fs.elems = nil
		return nil
	})
}

func (f *fakeConn) DelSet(set *nftables.Set) {
	f.queue("DelSet", func(s map[string]*fakeTable) error {
		t := s[set.Table.Name]
		if t.sets[set.Name] == nil {
			return fmt.Errorf("ENOENT set %s", set.Name)
		}
		if t.references()["set "+set.Name] {
			return fmt.Errorf("EBUSY set %s", set.Name)
		}
		delete(t.sets, set.Name)
		return nil
	})
}

func (f *fakeConn) SetAddElements(set *nftables.Set, vals []nftables.SetElement) error {
	if err := f.queueFailure("SetAddElements"); err != nil {
		return err
	}
	f.queue("SetAddElements", func(s map[string]*fakeTable) error {
		return addElems(s[set.Table.Name], set.Name, vals)
	})
	return nil
}

func (f *fakeConn) SetDeleteElements(set *nftables.Set, vals []nftables.SetElement) error {
	if err := f.queueFailure("SetDeleteElements"); err != nil {
		return err
	}
	f.queue("SetDeleteElements", func(s map[string]*fakeTable) error {
		fs := s[set.Table.Name].sets[set.Name]
		if fs == nil {
			return fmt.Errorf("ENOENT set %s", set.Name)
		}
		for _, v := range vals {
			i := slices.IndexFunc(fs.elems, func(e nftables.SetElement) bool { return string(e.Key) == string(v.Key) })
			if i < 0 {
				return fmt.Errorf("ENOENT element %x of %s", v.Key, set.Name)
			}
			fs.elems = slices.Delete(fs.elems, i, i+1)
		}
		return nil
	})
	return nil
}

func (f *fakeConn) AddRule(r *nftables.Rule) *nftables.Rule {
	f.queue("AddRule", func(s map[string]*fakeTable) error {
		t := s[r.Table.Name]
		if t.chain(r.Chain.Name) == nil {
			return fmt.Errorf("ENOENT chain %s of a rule", r.Chain.Name)
		}
		for _, e := range r.Exprs {
			if f.rejectExpr != nil && f.rejectExpr(e) {
				return fmt.Errorf("ENOENT expression %T", e)
			}
			for _, ref := range exprRefs(e) {
				if !t.resolves(ref) {
					return fmt.Errorf("ENOENT %s in a rule of %s", ref, r.Chain.Name)
				}
			}
		}
		t.rules[r.Chain.Name] = append(t.rules[r.Chain.Name], r)
		return nil
	})
	return r
}

func (f *fakeConn) AddObj(o nftables.Obj) nftables.Obj {
	n := o.(*nftables.NamedObj)
	f.queue("AddObj", func(s map[string]*fakeTable) error {
		s[n.Table.Name].objs[n.Name] = true
		return nil
	})
	return o
}

func (f *fakeConn) DeleteObject(o nftables.Obj) {
	n := o.(*nftables.NamedObj)
	f.queue("DeleteObject", func(s map[string]*fakeTable) error {
		t := s[n.Table.Name]
		if !t.objs[n.Name] {
			return fmt.Errorf("ENOENT counter %s", n.Name)
		}
		if t.references()["counter "+n.Name] {
			return fmt.Errorf("EBUSY counter %s", n.Name)
		}
		delete(t.objs, n.Name)
		return nil
	})
}

func (f *fakeConn) Flush() error { return f.FlushWithGenID(0) }

func (f *fakeConn) FlushWithGenID(gen uint32) error {
	pending := f.pending
	f.pending, f.ops = nil, nil
	if err := f.queueErr; err != nil {
		f.queueErr = nil
		return err
	}
	if err := f.flushErr; err != nil {
		f.flushErr = nil
		return err
	}
	if f.race {
		f.race = false
		f.gen++
	}
	if gen != 0 && gen != f.gen {
		return errors.New("ERESTART: the ruleset changed")
	}
	next := map[string]*fakeTable{}
	for name, t := range f.state {
		next[name] = t.clone()
	}
	for _, op := range pending {
		if err := op(next); err != nil {
			return err
		}
	}
	f.state = next
	f.gen++
	return nil
}

// CommitEntries implements EntryConn: each entry is deleted (it must
// exist) and added again with its mark, in one transaction.
func (f *fakeConn) CommitEntries(gen uint32, tx *EntryTx) error {
	if len(f.pending) > 0 {
		return errors.New("CommitEntries with operations queued on the Conn")
	}
	for _, m := range tx.Maps {
		set := &nftables.Set{Table: &nftables.Table{Name: tx.Table}, Name: m.Set}
		var del, add []nftables.SetElement
		for i, entry := range m.Entries {
			key := binary.NativeEndian.AppendUint32(nil, entry)
			del = append(del, nftables.SetElement{Key: key})
			add = append(add, nftables.SetElement{Key: key, Val: binary.NativeEndian.AppendUint32(nil, m.Marks[i])})
		}
		_ = f.SetDeleteElements(set, del)
		_ = f.SetAddElements(set, add)
	}
	if err := f.FlushWithGenID(gen); err != nil {
		return err
	}
	f.entryTxs++
	return nil
}

func (f *fakeConn) GetGen() (*nftables.Gen, error) { return &nftables.Gen{ID: f.gen}, nil }

func (f *fakeConn) ListTablesOfFamily(nftables.TableFamily) ([]*nftables.Table, error) {
	f.reads++
	var out []*nftables.Table
	for name := range f.state {
		out = append(out, &nftables.Table{Name: name, Family: nftables.TableFamilyINet})
	}
	return out, nil
}

func (f *fakeConn) ListChainsOfTableFamily(nftables.TableFamily) ([]*nftables.Chain, error) {
	var out []*nftables.Chain
	for _, t := range f.state {
		out = append(out, t.chains...)
	}
	return out, nil
}

func (f *fakeConn) GetSets(t *nftables.Table) ([]*nftables.Set, error) {
	var out []*nftables.Set
	for _, s := range f.state[t.Name].sets {
		out = append(out, s.set)
	}
	return out, nil
}

func (f *fakeConn) GetSetElements(s *nftables.Set) ([]nftables.SetElement, error) {
	fs := f.state[s.Table.Name].sets[s.Name]
	if fs == nil {
		return nil, fmt.Errorf("ENOENT set %s", s.Name)
	}
	return slices.Clone(fs.elems), nil
}

func (f *fakeConn) GetRules(t *nftables.Table, c *nftables.Chain) ([]*nftables.Rule, error) {
	return f.state[t.Name].rules[c.Name], nil
}

func (f *fakeConn) GetNamedObjects(t *nftables.Table) ([]nftables.Obj, error) {
	var out []nftables.Obj
	for name := range f.state[t.Name].objs {
		out = append(out, counterObj(t, name))
	}
	return out, nil
}

// elementsOf returns the sorted element identities of set name in our table.
func (f *fakeConn) elementsOf(name string) []string {
	fs := f.state[DefaultTableName].sets[name]
	if fs == nil {
		return nil
	}
	var out []string
	for _, e := range fs.elems {
		out = append(out, elementIdentity(e))
	}
	slices.Sort(out)
	return out
}

// checkElementType refuses, as the kernel does, an element whose key or
// data does not fit the set's type.
func checkElementType(set *nftables.Set, e nftables.SetElement) error {
	if set.KeyType.Bytes != 0 && !set.Concatenation && len(e.Key) != int(set.KeyType.Bytes) {
		return fmt.Errorf("EINVAL key of %d bytes in %s (%s)", len(e.Key), set.Name, set.KeyType.Name)
	}
	switch {
	case !set.IsMap:
		if e.VerdictData != nil || len(e.Val) > 0 {
			return fmt.Errorf("EINVAL data in set %s", set.Name)
		}
	case set.DataType.Name == nftables.TypeVerdict.Name:
		if e.VerdictData == nil {
			return fmt.Errorf("EINVAL element of verdict map %s without a verdict", set.Name)
		}
	case e.VerdictData != nil || len(e.Val) != int(set.DataType.Bytes):
		return fmt.Errorf("EINVAL element of map %s with %d bytes of data, want %d", set.Name, len(e.Val), set.DataType.Bytes)
	}
	return nil
}

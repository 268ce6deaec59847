package nft

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// fakeConn is an in-memory nftables with transactions: queued operations
// apply to a copy of the state that replaces the state only if all succeed.
type fakeConn struct {
	state      map[string]*fakeTable
	pending    []func(map[string]*fakeTable) error
	ops        []string // names of the operations of the last Flush
	flushErr   error    // returned by the next Flush
	rejectExpr func(expr.Any) bool
}

type fakeTable struct {
	sets   map[string][]string // set name + key type -> elements
	chains []*nftables.Chain
	rules  map[string][]*nftables.Rule
}

func newFakeConn() *fakeConn { return &fakeConn{state: map[string]*fakeTable{}} }

func (f *fakeConn) queue(op string, fn func(map[string]*fakeTable) error) {
	f.pending = append(f.pending, func(s map[string]*fakeTable) error {
		f.ops = append(f.ops, op)
		return fn(s)
	})
}

func setKey(s *nftables.Set) string { return s.Name + "/" + s.KeyType.Name }

func (f *fakeConn) AddTable(t *nftables.Table) *nftables.Table {
	f.queue("AddTable", func(s map[string]*fakeTable) error {
		if s[t.Name] == nil {
			s[t.Name] = &fakeTable{sets: map[string][]string{}, rules: map[string][]*nftables.Rule{}}
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
		t.chains = append(t.chains, c)
		return nil
	})
	return c
}

func (f *fakeConn) AddSet(set *nftables.Set, vals []nftables.SetElement) error {
	f.queue("AddSet", func(s map[string]*fakeTable) error {
		s[set.Table.Name].sets[setKey(set)] = keys(vals)
		return nil
	})
	return nil
}

func (f *fakeConn) FlushSet(set *nftables.Set) {
	f.queue("FlushSet", func(s map[string]*fakeTable) error {
		s[set.Table.Name].sets[setKey(set)] = nil
		return nil
	})
}

func (f *fakeConn) SetAddElements(set *nftables.Set, vals []nftables.SetElement) error {
	f.queue("SetAddElements", func(s map[string]*fakeTable) error {
		k := setKey(set)
		t := s[set.Table.Name]
		t.sets[k] = append(t.sets[k], keys(vals)...)
		return nil
	})
	return nil
}

func (f *fakeConn) AddRule(r *nftables.Rule) *nftables.Rule {
	f.queue("AddRule", func(s map[string]*fakeTable) error {
		for _, e := range r.Exprs {
			if f.rejectExpr != nil && f.rejectExpr(e) {
				return fmt.Errorf("ENOENT expression %T", e)
			}
		}
		t := s[r.Table.Name]
		t.rules[r.Chain.Name] = append(t.rules[r.Chain.Name], r)
		return nil
	})
	return r
}

func (f *fakeConn) Flush() error {
	pending := f.pending
	f.pending, f.ops = nil, nil
	if err := f.flushErr; err != nil {
		f.flushErr = nil
		return err
	}
	next := map[string]*fakeTable{}
	for name, t := range f.state {
		next[name] = &fakeTable{sets: maps.Clone(t.sets), chains: slices.Clone(t.chains), rules: maps.Clone(t.rules)}
	}
	for _, op := range pending {
		if err := op(next); err != nil {
			return err
		}
	}
	f.state = next
	return nil
}

func (f *fakeConn) ListTablesOfFamily(nftables.TableFamily) ([]*nftables.Table, error) {
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
	for k := range f.state[t.Name].sets {
		name, typ, _ := cut(k)
		kt := nftables.TypeIPAddr
		if typ == nftables.TypeIP6Addr.Name {
			kt = nftables.TypeIP6Addr
		}
		out = append(out, &nftables.Set{Table: t, Name: name, KeyType: kt})
	}
	return out, nil
}

func (f *fakeConn) GetRules(t *nftables.Table, c *nftables.Chain) ([]*nftables.Rule, error) {
	return f.state[t.Name].rules[c.Name], nil
}

func keys(vals []nftables.SetElement) []string {
	var out []string
	for _, v := range vals {
		out = append(out, fmt.Sprint(v.Key))
	}
	return out
}

func cut(k string) (string, string, bool) {
	i := len(k) - 1
	for i >= 0 && k[i] != '/' {
		i--
	}
	return k[:max(i, 0)], k[i+1:], i >= 0
}

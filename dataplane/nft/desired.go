package nft

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
)

// desired is everything the table must hold: the layout's base chains and
// sets, and the fast path's objects, with their contents.
type desired struct {
	l        *layout
	sets     []*setSpec // creation order: VIP sets, dispatch maps, fast path sets
	chains   []*chainWant
	counters []string
}

// setSpec is a set and its elements: given (base sets), or made from the
// fast path's description src when first needed (an entry map has many).
type setSpec struct {
	set   *nftables.Set
	src   *Set
	elems []nftables.SetElement
	built bool
	base  bool // part of the layout: its type never changes in place
}

// elements returns the set's elements.
func (s *setSpec) elements() []nftables.SetElement {
	if s.src != nil && !s.built {
		s.elems, s.built = s.src.elements(), true
	}
	return s.elems
}

// chainWant is a chain and its rules, each identified by its comment.
type chainWant struct {
	chain *nftables.Chain
	base  bool
	rules []ruleWant
}

type ruleWant struct {
	comment string
	exprs   []expr.Any
}

// buildDesired lays out cfg for our table.
func buildDesired(l *layout) *desired {
	v4, v6 := l.cfg.splitVIPs()
	d := &desired{l: l}
	d.sets = append(d.sets, &setSpec{set: l.set4, elems: elements(v4), base: true},
		&setSpec{set: l.set6, elems: elements(v6), base: true})
	for _, cs := range l.chains {
		cw := &chainWant{chain: cs.chain, base: true}
		for _, r := range cs.rules {
			cw.rules = append(cw.rules, ruleWant{comment: l.comment(r.name), exprs: r.exprs(l)})
		}
		d.chains = append(d.chains, cw)
	}
	f := l.cfg.Kernel
	if f == nil {
		return d
	}
	d4, d6 := dispatchSets(l.table, f)
	d4.base, d6.base = true, true
	d.sets = append(d.sets, d4, d6)
	for i := range f.Sets {
		d.sets = append(d.sets, &setSpec{set: f.Sets[i].nftSet(l.table), src: &f.Sets[i]})
	}
	for _, c := range f.Chains {
		cw := &chainWant{chain: &nftables.Chain{Name: c.Name, Table: l.table}}
		for _, r := range c.Rules {
			cw.rules = append(cw.rules, ruleWant{comment: ruleIdentity(r), exprs: r.Exprs})
		}
		d.chains = append(d.chains, cw)
	}
	d.counters = f.Counters
	return d
}

// ruleIdentity is the comment a fast path rule is stored with: its
// description and a digest of its expressions as the kernel receives them.
func ruleIdentity(r Rule) string {
	h := sha256.New()
	for _, e := range r.Exprs {
		b, err := expr.Marshal(byte(nftables.TableFamilyINet), e)
		if err != nil {
			fmt.Fprintf(h, "unmarshalable %T %v", e, err) // Flush reports the error
		}
		h.Write(b)
	}
	desc := r.Comment
	if len(desc) > 200 {
		desc = desc[:200]
	}
	return fmt.Sprintf("%s #%s", desc, hex.EncodeToString(h.Sum(nil)[:6]))
}

func (d *desired) setByName(name string) *setSpec {
	for _, s := range d.sets {
		if s.set.Name == name {
			return s
		}
	}
	return nil
}

// addRules queues cw's rules on c.
func (d *desired) addRules(c Conn, cw *chainWant) {
	for _, r := range cw.rules {
		c.AddRule(&nftables.Rule{Table: d.l.table, Chain: cw.chain, Exprs: r.exprs,
			UserData: userdata.AppendString(nil, userdata.TypeComment, r.comment)})
	}
}

// addAll queues, on c, the creation of the whole table. The caller has
// already queued the deletion of an old table.
func (d *desired) addAll(c Conn) error {
	c.AddTable(d.l.table)
	for _, name := range d.counters {
		c.AddObj(counterObj(d.l.table, name))
	}
	for _, cw := range d.chains {
		c.AddChain(cw.chain)
	}
	for _, s := range d.sets {
		if err := c.AddSet(s.set, s.elements()); err != nil {
			return fmt.Errorf("add set %s: %w", s.set.Name, err)
		}
	}
	for _, cw := range d.chains {
		d.addRules(c, cw)
	}
	return nil
}

func counterObj(t *nftables.Table, name string) *nftables.NamedObj {
	return &nftables.NamedObj{Table: t, Name: name, Type: nftables.ObjTypeCounter, Obj: &expr.Counter{}}
}

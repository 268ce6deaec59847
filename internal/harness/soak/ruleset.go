package soak

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// NormalizeRuleset turns `nft -j list ruleset` (or `nft -j list table ...`)
// into a canonical text that two equal configurations share whatever their
// history: no metainfo, no handles, no counter values (packets, bytes), no
// quota use (used, used_unit), no set element expiry or timeout. What is
// configuration stays, limits included (nft shows no limit state). Order:
// tables by family and name; in a table the named objects (sets, maps,
// counters, ...) by type and name, then the chains by name, each followed
// by its rules in their kernel order (rule order is semantics); set and
// map elements sorted, one line each. Object fields are printed as JSON
// with sorted keys.
func NormalizeRuleset(nftJSON []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(nftJSON))
	dec.UseNumber() // keep numbers exactly as nft printed them
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := dec.Decode(&doc); err != nil {
		return "", fmt.Errorf("normalize ruleset: %w", err)
	}
	if doc.Nftables == nil {
		return "", fmt.Errorf("normalize ruleset: no \"nftables\" array in %.80q", nftJSON)
	}
	groups := map[tableKey]*tableGroup{}
	for i, item := range doc.Nftables {
		for typ, raw := range item {
			if typ == "metainfo" {
				continue
			}
			o, err := newObject(typ, raw)
			if err != nil {
				return "", fmt.Errorf("normalize ruleset: item %d (%s): %w", i, typ, err)
			}
			g := groups[o.table]
			if g == nil {
				g = &tableGroup{}
				groups[o.table] = g
			}
			g.add(o)
		}
	}
	var b strings.Builder
	keys := slices.SortedFunc(maps.Keys(groups), func(x, y tableKey) int { return cmp.Or(cmp.Compare(x.family, y.family), cmp.Compare(x.name, y.name)) })
	for _, k := range keys {
		groups[k].write(&b)
	}
	return b.String(), nil
}

type tableKey struct{ family, name string }

// object is one item of the nftables array, normalized.
type object struct {
	typ   string
	table tableKey
	name  string // the object's name; for a rule, its chain
	body  map[string]any
	elems []string // set or map elements, canonical and sorted
}

func newObject(typ string, raw json.RawMessage) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil {
		return object{}, err
	}
	body = normalize(typ, body).(map[string]any)
	o := object{typ: typ, body: body}
	o.table.family, _ = body["family"].(string)
	delete(body, "family")
	if typ == "table" {
		o.table.name, _ = body["name"].(string)
		delete(body, "name")
	} else {
		o.table.name, _ = body["table"].(string)
		delete(body, "table")
		nameKey := "name"
		if typ == "rule" {
			nameKey = "chain"
		}
		o.name, _ = body[nameKey].(string)
		delete(body, nameKey)
	}
	delete(body, "handle")
	if elems, ok := body["elem"].([]any); ok {
		delete(body, "elem")
		for _, e := range elems {
			stripElem(e)
			o.elems = append(o.elems, canonical(e))
		}
		slices.Sort(o.elems)
	}
	return o, nil
}

// stripElem drops a set or map element's expiry and timeout:
// {"elem": {"val": ..., "timeout": 10, "expires": 4}}, also as a map
// element's key ([key, value]).
func stripElem(e any) {
	switch e := e.(type) {
	case map[string]any:
		if inner, ok := e["elem"].(map[string]any); ok {
			delete(inner, "expires")
			delete(inner, "timeout")
		}
	case []any:
		for _, x := range e {
			stripElem(x)
		}
	}
}

// normalize drops runtime state from v, found under key: counter values
// and quota use.
func normalize(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		switch key {
		case "counter":
			delete(v, "packets")
			delete(v, "bytes")
		case "quota":
			delete(v, "used")
			delete(v, "used_unit")
		}
		for k, x := range v {
			v[k] = normalize(k, x)
		}
	case []any:
		for i, x := range v {
			v[i] = normalize(key, x)
		}
	}
	return v
}

// canonical is v as JSON with sorted keys (encoding/json sorts map keys).
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil { // values decoded from JSON always encode
		panic(fmt.Sprintf("soak: re-encoding decoded JSON: %v", err))
	}
	return string(b)
}

// tableGroup is one table's objects.
type tableGroup struct {
	table   *object
	objects []object            // named objects but chains
	chains  []object            // in input order
	rules   map[string][]object // by chain, in input order
}

func (g *tableGroup) add(o object) {
	switch o.typ {
	case "table":
		g.table = &o
	case "chain":
		g.chains = append(g.chains, o)
	case "rule":
		if g.rules == nil {
			g.rules = map[string][]object{}
		}
		g.rules[o.name] = append(g.rules[o.name], o)
	default:
		g.objects = append(g.objects, o)
	}
}

func (g *tableGroup) write(b *strings.Builder) {
	if g.table != nil {
		fmt.Fprintf(b, "table %s %s %s\n", g.table.table.family, g.table.table.name, canonical(g.table.body))
	}
	byName := func(x, y object) int { return cmp.Or(cmp.Compare(x.typ, y.typ), cmp.Compare(x.name, y.name)) }
	slices.SortStableFunc(g.objects, byName)
	for _, o := range g.objects {
		o.writeLine(b)
		for _, e := range o.elems {
			fmt.Fprintf(b, "    elem %s\n", e)
		}
	}
	slices.SortStableFunc(g.chains, byName)
	seen := map[string]bool{}
	for _, c := range g.chains {
		c.writeLine(b)
		seen[c.name] = true
		g.writeRules(b, c.name)
	}
	// Rules of chains not listed (a partial listing) still count.
	for _, chain := range slices.Sorted(maps.Keys(g.rules)) {
		if !seen[chain] {
			g.writeRules(b, chain)
		}
	}
}

func (g *tableGroup) writeRules(b *strings.Builder, chain string) {
	for _, r := range g.rules[chain] {
		fmt.Fprintf(b, "    rule %s %s %s %s\n", r.table.family, r.table.name, chain, canonical(r.body))
	}
}

func (o object) writeLine(b *strings.Builder) {
	fmt.Fprintf(b, "  %s %s %s %s %s\n", o.typ, o.table.family, o.table.name, o.name, canonical(o.body))
}

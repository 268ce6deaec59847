package nft

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// Count is a counter's packets and bytes.
type Count struct{ Packets, Bytes uint64 }

// ObjectReader reads the named objects of a table (*nftables.Conn).
type ObjectReader interface {
	GetNamedObjects(t *nftables.Table) ([]nftables.Obj, error)
}

// ReadCounters returns the counter objects of table inet name (the kernel
// path's per-route and per-endpoint counters) by name, in one dump; empty
// when the table does not exist. Use a connection of its own: Programmer
// is not safe for concurrent use.
func ReadCounters(c ObjectReader, name string) (map[string]Count, error) {
	objs, err := c.GetNamedObjects(&nftables.Table{Name: name, Family: nftables.TableFamilyINet})
	if err != nil {
		return nil, fmt.Errorf("read the counters of table inet %s: %w", name, err)
	}
	out := make(map[string]Count, len(objs))
	for _, o := range objs {
		n, ok := o.(*nftables.NamedObj)
		if !ok || n.Type != nftables.ObjTypeCounter {
			continue
		}
		if c, ok := n.Obj.(*expr.Counter); ok {
			out[n.Name] = Count{Packets: c.Packets, Bytes: c.Bytes}
		}
	}
	return out, nil
}

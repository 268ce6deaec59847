package maglev_test

import (
	"fmt"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/maglev"
)

// A Service with up to 4 endpoints, slots 1 and 3 ready. The table is built
// off the hot path and published with an atomic pointer; the packet path
// loads the pointer, hashes the flow key (here an IPv4 5-tuple laid out as
// nftables registers: addresses, ports, protocol padded to 4 bytes) and
// looks the slot up.
func Example() {
	params, err := maglev.NewParams(4)
	if err != nil {
		panic(err)
	}
	var current atomic.Pointer[maglev.Table]

	table, err := params.Build([]bool{false, true, false, true})
	if err != nil {
		panic(err)
	}
	current.Store(table)

	flowKey := []byte{10, 0, 0, 1, 192, 0, 2, 1, 0x30, 0x39, 0, 80, 6, 0, 0, 0}
	slot, ok := current.Load().Lookup32(maglev.JHash(flowKey, maglev.FlowSeed))
	fmt.Println(slot == 1 || slot == 3, ok, table.Size(), table.Entries(0))
	// Output: true true 16381 0
}

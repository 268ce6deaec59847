package classify

import (
	"slices"

	"github.com/sllbrd/sllbrd/model"
)

// The index of one key is a block of uint32 words in Table.arena:
//
//	[0]            n | flagCheckDstPort
//	[1 .. n]       starts: the first destination port of each interval, ascending, starts[0] == 0
//	[n+1 .. 2n+1]  offsets: interval i's candidates are arena[offsets[i]:offsets[i+1]]
//	[2n+2 ..]      the candidates, each a route index | candUnconditional
//
// The candidates of an interval are the routes covering its ports in
// precedence order. A small key's block fits in one or two cache lines.
const (
	flagCheckDstPort  = 1 << 31 // fallback: one interval, routes check the destination port
	candUnconditional = 1 << 31 // the route needs no further check for this key
	rankMask          = candUnconditional - 1
)

// maxIntervalEntries bounds the candidates one key's intervals may hold;
// beyond it the key falls back to one interval listing each route once.
const maxIntervalEntries = 1 << 18

// keyRoutes describes the routes of one key for buildBlock.
type keyRoutes struct {
	ranks         []int32                            // ascending precedence order
	portsOf       func(rank int32) []model.PortRange // destination ports (nil: any)
	unconditional func(rank int32, checkDstPort bool) bool
}

// buildBlock appends the block of one key to arena and returns its offset.
func buildBlock(arena []uint32, kr keyRoutes) ([]uint32, uint32) {
	starts, runs, ok := sweep(kr)
	fallback := !ok
	if fallback {
		starts, runs = []uint32{0}, [][]int32{kr.ranks}
	}
	off := uint32(len(arena))
	head := uint32(len(starts))
	if fallback {
		head |= flagCheckDstPort
	}
	arena = append(arena, head)
	arena = append(arena, starts...)
	next := off + 1 + 2*uint32(len(starts)) + 1
	for _, run := range runs {
		arena = append(arena, next)
		next += uint32(len(run))
	}
	arena = append(arena, next)
	for _, run := range runs {
		for _, rank := range run {
			c := uint32(rank)
			if kr.unconditional(rank, fallback) {
				c |= candUnconditional
			}
			arena = append(arena, c)
		}
	}
	return arena, off
}

// portEvent opens (add) or closes a destination-port range of route local.
type portEvent struct {
	pos   int // a port, or 65536
	local int // index into keyRoutes.ranks
	add   bool
}

// sweep walks the range boundaries in port order keeping the set of open
// routes, merging neighbouring intervals with equal route lists. It gives up
// (ok false) when the lists would hold more than maxIntervalEntries routes.
func sweep(kr keyRoutes) (starts []uint32, runs [][]int32, ok bool) {
	events := portEvents(kr)
	open := make([]uint64, (len(kr.ranks)+63)/64)
	starts, runs = []uint32{0}, [][]int32{nil}
	total := 0
	for e := 0; e < len(events); {
		pos := events[e].pos
		for ; e < len(events) && events[e].pos == pos; e++ {
			word, bit := events[e].local/64, uint64(1)<<(events[e].local%64)
			if events[e].add {
				open[word] |= bit
			} else {
				open[word] &^= bit
			}
		}
		if pos > 0xffff {
			break
		}
		run := openRanks(open, kr.ranks)
		switch {
		case pos == 0:
			runs[0] = run
		case slices.Equal(run, runs[len(runs)-1]):
			continue
		default:
			starts, runs = append(starts, uint32(pos)), append(runs, run)
		}
		if total += len(run); total > maxIntervalEntries {
			return nil, nil, false
		}
	}
	return starts, runs, true
}

func portEvents(kr keyRoutes) []portEvent {
	var events []portEvent
	for local, rank := range kr.ranks {
		ports := kr.portsOf(rank)
		if ports == nil {
			ports = []model.PortRange{model.AnyPort}
		}
		for _, r := range ports {
			events = append(events,
				portEvent{pos: int(r.From), local: local, add: true},
				portEvent{pos: int(r.To) + 1, local: local})
		}
	}
	slices.SortFunc(events, func(a, b portEvent) int { return a.pos - b.pos })
	return events
}

// openRanks returns the ranks of the open routes, in precedence order.
func openRanks(open []uint64, ranks []int32) []int32 {
	var run []int32
	for w, bits := range open {
		for b := 0; bits != 0; b, bits = b+1, bits>>1 {
			if bits&1 != 0 {
				run = append(run, ranks[w*64+b])
			}
		}
	}
	return run
}

// candidates returns the candidate words for port from the block at off.
func candidates(arena []uint32, off uint32, port uint16) (cands []uint32, checkDstPort bool) {
	head := arena[off]
	n := int(head &^ flagCheckDstPort)
	starts := arena[off+1 : int(off)+1+n]
	i, j := 0, n
	for j-i > 1 {
		h := int(uint(i+j) >> 1)
		if starts[h] <= uint32(port) {
			i = h
		} else {
			j = h
		}
	}
	offsets := arena[int(off)+1+n:]
	return arena[offsets[i]:offsets[i+1]], head&flagCheckDstPort != 0
}

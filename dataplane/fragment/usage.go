package fragment

import "time"

// Usage is what the table holds at one moment.
type Usage struct {
	Capacity int // entries the table holds at most
	Entries  int // live entries: datagrams remembered or waiting for their first fragment
	Held     int // later fragments parked, waiting for their first fragment or Expire
}

// Usage counts the live entries and parked fragments at now. It takes each
// set's lock in turn, like Expire, so it is a consistent count per set, not
// an atomic snapshot of the whole table; it is meant for inspection, not the
// packet path.
func (t *Table) Usage(now time.Time) Usage {
	ts := now.UnixNano()
	u := Usage{Capacity: t.Capacity()}
	for i := range t.sets {
		mu := &t.locks[uint64(i)&(stripes-1)]
		mu.Lock()
		for w := range t.sets[i] {
			e := &t.sets[i][w]
			if e.expires > ts {
				u.Entries++
			}
			u.Held += int(e.nheld) // parked until released or expired, live or not
		}
		mu.Unlock()
	}
	return u
}

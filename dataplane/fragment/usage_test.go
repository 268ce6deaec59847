package fragment

import (
	"testing"
	"time"
)

// TestUsageCountsLiveEntriesAndParkedFragments follows one table through
// remember, park, release and expiry.
func TestUsageCountsLiveEntriesAndParkedFragments(t *testing.T) {
	tb := New(64, WithLifetime(100*time.Millisecond))
	out := NewTokens()
	if u := tb.Usage(t0); u != (Usage{Capacity: 64}) {
		t.Fatalf("empty table: %+v", u)
	}
	tb.Remember(key(1), 7, t0, out)
	tb.Lookup(key(2), t0, true, 21, out)
	tb.Lookup(key(2), t0, true, 22, out)
	tb.Lookup(key(3), t0, true, 31, out)
	if u := tb.Usage(t0.Add(time.Millisecond)); u != (Usage{Capacity: 64, Entries: 3, Held: 3}) {
		t.Fatalf("after one remembered and three parked: %+v", u)
	}
	out.Reset()
	tb.Remember(key(2), 8, t0.Add(time.Millisecond), out)
	if u := tb.Usage(t0.Add(2 * time.Millisecond)); u != (Usage{Capacity: 64, Entries: 3, Held: 1}) {
		t.Fatalf("after key 2's first fragment: %+v", u)
	}
	// Past the lifetime the entries are dead, but the parked fragment
	// still occupies its queue until Expire hands it back.
	late := t0.Add(200 * time.Millisecond)
	if u := tb.Usage(late); u != (Usage{Capacity: 64, Entries: 0, Held: 1}) {
		t.Fatalf("after the lifetime, before Expire: %+v", u)
	}
	tb.Expire(late, nil)
	if u := tb.Usage(late); u != (Usage{Capacity: 64}) {
		t.Fatalf("after Expire: %+v", u)
	}
}

package soak

import (
	"math"
	"slices"
	"testing"
)

func TestFlat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		base, now Resources
		tol       float64
		floor     float64
		want      []string
	}{
		{"equal", Resources{"lb1/fds": 20}, Resources{"lb1/fds": 20}, 0, 0, nil},
		{"within tolerance", Resources{"lb1/rss_bytes": 100e6}, Resources{"lb1/rss_bytes": 109e6}, 0.1, 0, nil},
		{"above tolerance", Resources{"lb1/rss_bytes": 100e6}, Resources{"lb1/rss_bytes": 111e6}, 0.1, 0,
			[]string{"lb1/rss_bytes: base 1e+08 now 1.11e+08 (+1.1e+07, allowed ±1e+07)"}},
		{"below tolerance", Resources{"lb1/goroutines": 100}, Resources{"lb1/goroutines": 80}, 0.1, 0,
			[]string{"lb1/goroutines: base 100 now 80 (-20, allowed ±10)"}},
		{"floor covers small counts", Resources{"lb1/fds": 10}, Resources{"lb1/fds": 14}, 0.1, 5, nil},
		{"floor from zero", Resources{"lb1/rules": 0}, Resources{"lb1/rules": 3}, 0.5, 2,
			[]string{"lb1/rules: base 0 now 3 (+3, allowed ±2)"}},
		{"missing and new keys", Resources{"b": 1, "a": 1}, Resources{"a": 1, "d": 2, "c": 3}, 0, 0,
			[]string{"b: missing now (base 1)", "c: new now 3 (not in base)", "d: new now 2 (not in base)"}},
		{"NaN", Resources{"x": 1}, Resources{"x": math.NaN()}, 1, 1, []string{"x: base 1 now NaN (+NaN, allowed ±1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Flat(tc.base, tc.now, tc.tol, tc.floor); !slices.Equal(got, tc.want) {
				t.Errorf("Flat\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

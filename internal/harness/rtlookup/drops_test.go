package rtlookup

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDropped(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("route get: %w", unix.ENETUNREACH), true},
		{fmt.Errorf("route get: %w", unix.EINVAL), true},
		{fmt.Errorf("route get: %w", unix.EHOSTUNREACH), false},
		{errors.New("decode route"), false},
		{nil, false},
	} {
		if got := Dropped(tc.err); got != tc.want {
			t.Errorf("Dropped(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

package maglev

import "testing"

func TestDefaultSize(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{1, 16381}, {3, 16381}, {32, 16381}, {109, 16381}, {110, 16519},
		{1000, 150001}, {5000, 750019}, {MaxSlots, 9830257},
	} {
		got, err := DefaultSize(tc.n)
		if err != nil || got != tc.want {
			t.Errorf("DefaultSize(%d) = %d, %v; want %d", tc.n, got, err, tc.want)
		}
	}
	for _, n := range []int{-1, 0, MaxSlots + 1} {
		if m, err := DefaultSize(n); err == nil {
			t.Errorf("DefaultSize(%d) = %d, want an error", n, m)
		}
	}
}

func TestIsPrimeMatchesSieve(t *testing.T) {
	const limit = 100000
	composite := make([]bool, limit)
	for i := 2; i*i < limit; i++ {
		for j := i * i; j < limit; j += i {
			composite[j] = true
		}
	}
	for m := range limit {
		if want := m >= 2 && !composite[m]; isPrime(m) != want {
			t.Fatalf("isPrime(%d) = %v, want %v", m, !want, want)
		}
	}
}

func TestNewParamsValidatesSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		n, m int
		ok   bool
	}{
		{"NFQLB default", 32, 997, true},
		{"smallest", 1, 2, true},
		{"paper", 1000, 65537, true},
		{"largest prime below the maximum", 10, 16777213, true},
		{"not prime", 32, 1000, false},
		{"equal to N", 3, 3, false},
		{"below N", 32, 31, false},
		{"zero", 1, 0, false},
		{"negative", 1, -7, false},
		{"prime above the maximum", 10, 16777259, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewParams(tc.n, WithSize(tc.m))
			if (err == nil) != tc.ok {
				t.Fatalf("NewParams(%d, WithSize(%d)) error = %v, want ok=%v", tc.n, tc.m, err, tc.ok)
			}
			if tc.ok && (p.Size() != tc.m || p.Slots() != tc.n) {
				t.Errorf("got M=%d N=%d, want M=%d N=%d", p.Size(), p.Slots(), tc.m, tc.n)
			}
		})
	}
}

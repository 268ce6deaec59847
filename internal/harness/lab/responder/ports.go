package responder

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePorts parses a comma-separated list of ports and inclusive ranges,
// e.g. "80,5000-5010". Duplicates are removed; order is kept.
func ParsePorts(s string) ([]uint16, error) {
	var out []uint16
	seen := map[uint16]bool{}
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		first, err := parsePort(lo)
		if err != nil {
			return nil, fmt.Errorf("ports %q: %w", s, err)
		}
		last := first
		if isRange {
			if last, err = parsePort(hi); err != nil {
				return nil, fmt.Errorf("ports %q: %w", s, err)
			}
			if last < first {
				return nil, fmt.Errorf("ports %q: range %s is reversed", s, part)
			}
		}
		for p := int(first); p <= int(last); p++ {
			if !seen[uint16(p)] {
				seen[uint16(p)] = true
				out = append(out, uint16(p))
			}
		}
	}
	return out, nil
}

// FormatPorts is the inverse of ParsePorts (without range compression).
func FormatPorts(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return uint16(n), nil
}

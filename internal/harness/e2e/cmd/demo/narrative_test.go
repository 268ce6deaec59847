package main

import "testing"

// TestNarrative: the demo prints a test log without its prefixes, keeping
// the indentation of multi-line entries.
func TestNarrative(t *testing.T) {
	for in, want := range map[string]string{"    env_test.go:185: node up": "node up", "        images:": "images:", "        - name: x": "- name: x", "          newTag: y": "  newTag: y", "=== RUN   TestX": "=== RUN   TestX"} {
		if got := narrative(in); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
}

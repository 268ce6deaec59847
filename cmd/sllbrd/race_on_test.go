//go:build race

package main

// raceEnabled: this test binary runs with the race detector, and so does
// the sllbrd it builds for its labs.
const raceEnabled = true

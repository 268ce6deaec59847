package apiserver

import (
	"reflect"
	"slices"

	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// publisher decides what to emit: it numbers the States and remembers the
// last Update emitted.
type publisher struct {
	generation uint64
	last       manifest.Update
	emitted    bool
}

// apply folds one translation result into the last Update and says whether
// the result differs from what was last emitted. A failed rebuild (err set)
// keeps the last State and problems. state.Generation is set when the State
// changed.
func (p *publisher) apply(state *model.State, problems []translate.Problem, err error) (manifest.Update, bool) {
	next := manifest.Update{State: p.last.State, Problems: p.last.Problems, Err: err}
	if err == nil {
		next.Problems = problems
		if !sameState(state, p.last.State) {
			p.generation++
			state.Generation = p.generation
			next.State = state
		}
	}
	changed := !p.emitted || next.State != p.last.State ||
		!slices.Equal(next.Problems, p.last.Problems) || errText(next.Err) != errText(p.last.Err)
	p.last, p.emitted = next, true
	return next, changed
}

// sameState compares two states ignoring their generations.
func sameState(a, b *model.State) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Generation, y.Generation = 0, 0
	return reflect.DeepEqual(x, y)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

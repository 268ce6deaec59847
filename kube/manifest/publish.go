package manifest

import (
	"reflect"
	"slices"

	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// Publisher decides what a configuration source emits: it numbers the
// States and remembers the last Update. Both the file source and the
// API-server source use it, so they number and deduplicate alike.
type Publisher struct {
	generation uint64
	last       Update
	emitted    bool
}

// Apply folds one translation result into the last Update and says whether
// the result differs from what was last emitted. A failed rebuild (err set)
// keeps the last State and problems. state.Generation is set when the State
// changed.
func (p *Publisher) Apply(state *model.State, problems []translate.Problem, err error) (Update, bool) {
	next := Update{State: p.last.State, Problems: p.last.Problems, Err: err}
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

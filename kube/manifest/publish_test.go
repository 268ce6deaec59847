package manifest

import (
	"errors"
	"testing"

	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

func TestPublisher(t *testing.T) {
	state := func(svc string) *model.State {
		return &model.State{Services: []model.Service{{Name: svc, MaxEndpoints: 32}}}
	}
	problem := []translate.Problem{{Kind: translate.KindL34Route, Name: "r", Message: "bad"}}
	type step struct {
		state    *model.State
		problems []translate.Problem
		err      error
		wantEmit bool
		wantGen  uint64 // generation of the emitted state (0: none)
		wantSvc  string // name of the emitted state's Service
	}
	steps := []step{
		{err: errors.New("no Gateway"), wantEmit: true},                                  // first result is always emitted
		{err: errors.New("no Gateway"), wantEmit: false},                                 // same error
		{state: state("a"), wantEmit: true, wantGen: 1, wantSvc: "a"},                    // first state
		{state: state("a"), wantEmit: false, wantGen: 1, wantSvc: "a"},                   // equal state: nothing
		{state: state("a"), problems: problem, wantEmit: true, wantGen: 1, wantSvc: "a"}, // problems changed only
		{state: state("b"), problems: problem, wantEmit: true, wantGen: 2, wantSvc: "b"},
		{err: errors.New("no Gateway"), wantEmit: true, wantGen: 2, wantSvc: "b"},        // error keeps the state
		{state: state("b"), problems: problem, wantEmit: true, wantGen: 2, wantSvc: "b"}, // recovered, same state
	}
	var p Publisher
	for i, s := range steps {
		u, emit := p.Apply(s.state, s.problems, s.err)
		if emit != s.wantEmit {
			t.Errorf("step %d: emit %v, want %v", i, emit, s.wantEmit)
		}
		if s.wantGen == 0 {
			if u.State != nil {
				t.Errorf("step %d: state %+v, want none", i, u.State)
			}
			continue
		}
		if u.State == nil || u.State.Generation != s.wantGen || u.State.Services[0].Name != s.wantSvc {
			t.Errorf("step %d: state %+v, want generation %d service %s", i, u.State, s.wantGen, s.wantSvc)
		}
		if (u.Err != nil) != (s.err != nil) {
			t.Errorf("step %d: err %v, want %v", i, u.Err, s.err)
		}
	}
}

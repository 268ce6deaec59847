package main

import (
	"slices"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/model"
)

// configStatus remembers what `sllbrd show config` reports: the last
// dataplane applies and what the source said last. Its methods are safe
// for concurrent use.
type configStatus struct {
	now func() time.Time

	mu                sync.Mutex
	appliedGen        uint64
	appliedAt         time.Time
	lastAttempt       time.Time
	lastErr           string
	dataplaneProblems []string
	sourceProblems    []string
	sourceErr         string
}

func newConfigStatus(now func() time.Time) *configStatus { return &configStatus{now: now} }

// observeApply records one dataplane apply.
func (s *configStatus) observeApply(res dataplane.Applied, err error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastAttempt, s.lastErr = now, ""
	if err != nil {
		s.lastErr = err.Error()
	} else {
		s.appliedGen, s.appliedAt = res.Generation, now
	}
	s.dataplaneProblems = s.dataplaneProblems[:0]
	for _, p := range res.Problems {
		s.dataplaneProblems = append(s.dataplaneProblems, p.Error())
	}
}

// observeSource records what the configuration source emitted.
func (s *configStatus) observeSource(u manifest.Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sourceErr = ""
	if u.Err != nil {
		s.sourceErr = u.Err.Error()
	}
	s.sourceProblems = s.sourceProblems[:0]
	for _, p := range u.Problems {
		s.sourceProblems = append(s.sourceProblems, p.String())
	}
}

// statusSnapshot is configStatus at one moment.
type statusSnapshot struct {
	appliedGen             uint64
	appliedAt, lastAttempt time.Time
	lastErr, sourceErr     string
	problems               []string // the source's, then the dataplane's
}

func (s *configStatus) snapshot() statusSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return statusSnapshot{appliedGen: s.appliedGen, appliedAt: s.appliedAt, lastAttempt: s.lastAttempt,
		lastErr: s.lastErr, sourceErr: s.sourceErr,
		problems: append(slices.Clone(s.sourceProblems), s.dataplaneProblems...)}
}

// recordingProgrammer is the applier's dataplane, recording every apply.
type recordingProgrammer struct {
	programmer
	status *configStatus
}

func (r recordingProgrammer) Apply(st *model.State, gateways []route.Nexthop) (dataplane.Applied, error) {
	res, err := r.programmer.Apply(st, gateways)
	r.status.observeApply(res, err)
	return res, err
}

package controller

import (
	"reflect"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

// Event reasons other than ReasonReconcileFailed and the pod faults of
// kube/controller/endpoints.
const (
	ReasonEndpointsOverLimit = "EndpointsOverLimit"
	ReasonInvalidParameters  = "InvalidParameters"
	ReasonInvalidTemplate    = "InvalidTemplate"
	ReasonInvalidService     = "InvalidService"
	ReasonSliceNameTaken     = "EndpointSliceNameTaken"
)

// eventAction is the events.k8s.io action of the controller's Events.
const eventAction = "Reconcile"

// reporter writes Warning Events once per object, reason and message: a
// problem that persists is not reported again until it changes or has been
// resolved.
type reporter struct {
	mu   sync.Mutex
	rec  events.EventRecorder // nil until Run starts the recorder
	seen map[types.UID]map[string]string
}

func newReporter() *reporter {
	return &reporter{seen: map[types.UID]map[string]string{}}
}

func (r *reporter) setRecorder(rec events.EventRecorder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec = rec
}

// warn records a Warning Event on obj unless the same reason and message
// were the last reported for it.
func (r *reporter) warn(obj runtime.Object, reason, message string) {
	uid, ok := uidOf(obj)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[uid][reason] == message || r.rec == nil {
		return
	}
	if r.seen[uid] == nil {
		r.seen[uid] = map[string]string{}
	}
	r.seen[uid][reason] = message
	r.rec.Eventf(obj, nil, corev1.EventTypeWarning, reason, eventAction, "%s", clipNote(message))
}

// problem is one of the problems warnEach reports.
type problem struct {
	key, reason, note string
	related           runtime.Object // nil for none
}

// warnEach records a Warning Event on obj for each problem whose key was
// not reported in family since it last went away, and forgets the keys of
// family that are not among problems, so that a problem that comes back
// is reported again. The key, not the note, identifies a problem: a note
// may change while the problem lasts. (The Event broadcaster folds Events
// with the same reason and related object into one series that keeps the
// first note: distinct problems need distinct reasons or related objects.)
func (r *reporter) warnEach(obj runtime.Object, family string, problems []problem) {
	uid, ok := uidOf(obj)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	prefix := family + "\x00" // apart from warn's reasons, which have no NUL
	current := map[string]bool{}
	for _, p := range problems {
		current[prefix+p.key] = true
	}
	for k := range r.seen[uid] {
		if strings.HasPrefix(k, prefix) && !current[k] {
			delete(r.seen[uid], k)
		}
	}
	if r.rec == nil {
		return
	}
	for _, p := range problems {
		if _, done := r.seen[uid][prefix+p.key]; done {
			continue
		}
		if r.seen[uid] == nil {
			r.seen[uid] = map[string]string{}
		}
		r.seen[uid][prefix+p.key] = p.note
		r.rec.Eventf(obj, p.related, corev1.EventTypeWarning, p.reason, eventAction, "%s", clipNote(p.note))
	}
}

// resolved notes that obj no longer has the problem reason.
func (r *reporter) resolved(obj runtime.Object, reason string) {
	uid, ok := uidOf(obj)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen[uid], reason)
}

// forget drops what was reported about a deleted object.
func (r *reporter) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, uid)
}

func uidOf(obj runtime.Object) (types.UID, bool) {
	if obj == nil || (reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil()) {
		return "", false
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetUID() == "" {
		return "", false
	}
	return m.GetUID(), true
}

// maxNote is the longest note the API server accepts in an Event.
const maxNote = 1024

func clipNote(s string) string {
	if len(s) <= maxNote {
		return s
	}
	cut := maxNote - len(" ...")
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + " ..."
}

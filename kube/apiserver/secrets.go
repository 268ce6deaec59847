package apiserver

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/apigate"
	"github.com/sllbrd/sllbrd/kube/informer"
)

// secretSyncTimeout bounds the wait for a newly referenced Secret's first
// list; a Secret still unread then counts as missing until it arrives.
const secretSyncTimeout = 3 * time.Second

// secretWatch follows exactly the Secrets that GatewayRouters reference
// (spec.bgp.passwordSecretRef), each with its own list/watch restricted by
// a metadata.name field selector. The API server authorizes such a request
// against the resourceNames of an RBAC rule, so sllbrd needs no right to
// list the namespace's other Secrets (deploy/rbac/role.yaml). Only Run's
// goroutine calls follow; stop ends every watch.
type secretWatch struct {
	client    kubernetes.Interface
	gate      *apigate.Gate // the Source's
	namespace string
	changed   chan<- struct{}
	log       *slog.Logger

	watched map[string]*watchedSecret // by Secret name
	wg      sync.WaitGroup
}

type watchedSecret struct {
	informer *informer.Informer
	cancel   context.CancelFunc
	lastErr  string // last list/watch error logged
}

func (s *Source) newSecretWatch(changed chan<- struct{}) *secretWatch {
	return &secretWatch{client: s.kube, gate: s.gate, namespace: s.namespace, changed: changed, log: s.log,
		watched: map[string]*watchedSecret{}}
}

// follow starts watching the Secrets the routers reference, stops watching
// those no longer referenced, and returns the referenced Secrets read so
// far. A newly referenced Secret is waited for (at most secretSyncTimeout).
func (w *secretWatch) follow(ctx context.Context, routers []*v1alpha1.GatewayRouter) []*corev1.Secret {
	want := map[string]bool{}
	for _, r := range routers {
		if b := r.Spec.BGP; r.Namespace == w.namespace && b != nil && b.PasswordSecretRef != nil {
			want[b.PasswordSecretRef.Name] = true
		}
	}
	for name, ws := range w.watched {
		if !want[name] {
			ws.cancel()
			delete(w.watched, name)
		}
	}
	var fresh []cache.InformerSynced
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := w.watched[name]; !ok {
			ws := w.start(ctx, name)
			w.watched[name] = ws
			fresh = append(fresh, ws.informer.HasSynced)
		}
	}
	if len(fresh) > 0 {
		wctx, cancel := context.WithTimeout(ctx, secretSyncTimeout)
		cache.WaitForCacheSync(wctx.Done(), fresh...)
		cancel()
	}
	var out []*corev1.Secret
	for _, name := range slices.Sorted(maps.Keys(w.watched)) {
		out = append(out, listOf[*corev1.Secret](w.watched[name].informer)...)
	}
	return out
}

// start runs the watch of the Secret name until follow or stop cancels it.
func (w *secretWatch) start(ctx context.Context, name string) *watchedSecret {
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
	ws := &watchedSecret{}
	lw := w.gate.Wrap(cache.NewFilteredListWatchFromClient(w.client.CoreV1().RESTClient(), "secrets", w.namespace, byName))
	ws.informer = informer.New(lw, &corev1.Secret{}, informer.Options{
		// Keep the name, namespace and data only: no managedFields, and no
		// kubectl last-applied annotation, which would hold the data again.
		Transform: func(obj any) (any, error) {
			if s, ok := obj.(*corev1.Secret); ok {
				return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace,
					ResourceVersion: s.ResourceVersion}, Data: s.Data, Type: s.Type}, nil
			}
			return obj, nil
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { signal(w.changed) },
			UpdateFunc: func(any, any) { signal(w.changed) },
			DeleteFunc: func(any) { signal(w.changed) },
		},
		OnError: func(err error) { // from the informer's goroutine only
			if msg := err.Error(); msg != ws.lastErr {
				ws.lastErr = msg
				w.log.Warn("cannot read the Secret of a GatewayRouter's BGP password", "secret", w.namespace+"/"+name, "err", msg)
			}
		},
	})
	wctx, cancel := context.WithCancel(ctx)
	ws.cancel = cancel
	w.wg.Go(func() { ws.informer.RunWithContext(wctx) })
	return ws
}

// stop ends every watch and waits for them.
func (w *secretWatch) stop() {
	for name, ws := range w.watched {
		ws.cancel()
		delete(w.watched, name)
	}
	w.wg.Wait()
}

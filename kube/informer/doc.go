// Package informer keeps a local cache of one kind of object in step with
// the API server, as client-go's SharedIndexInformer does, but resumes at
// once after the server restarts.
//
// client-go's informers relist after every end of their ListAndWatch with
// a backoff of 0.8 s doubling to 30 s (plus up to as much again of
// jitter), reset only after two minutes without one. A restarted API
// server answers the informers' resumed watches with 410 Gone (its watch
// cache starts at the current revision), and each 410 ends a ListAndWatch:
// after a few restarts within two minutes, an informer relisted up to a
// minute after the server was back, and its user missed every change
// meanwhile. The backoff cannot be set through the informer's options.
//
// An Informer runs client-go's Reflector (lists, watches, resource
// versions, bookmarks, watch-list streams) into its own store, in its own
// loop:
//   - after a ListAndWatch that listed and then watched for at least a
//     second (its watch ended, e.g. on a 410), it relists at once;
//   - after one that failed or ended sooner, it backs off from 250 ms,
//     doubling to 30 s with up to half as much again of jitter, and the
//     backoff is reset by the next ListAndWatch that ran;
//   - within a ListAndWatch, the reflector retries a watch the server
//     refused (connection refused, 429) after 250 ms plus jitter.
//
// Wrap the ListerWatcher in a kube/apigate Gate: the gate holds every
// request back while the server does not answer, so an outage costs one
// failure, and nothing here polls a dead server.
//
// Contract: the store holds the objects as transformed by
// Options.Transform. The handler is called from the Informer's goroutine,
// in the order of the changes, after the store holds them, and must not
// block: OnAdd for an object new to the store (isInInitialList until the
// first list is stored), OnUpdate for an object changed or listed again,
// OnDelete with the deleted object, or with a cache.DeletedFinalStateUnknown
// for an object missing from a relist. HasSynced turns true once the
// first list is stored and its OnAdd calls returned.
package informer

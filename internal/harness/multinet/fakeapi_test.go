package multinet

import (
	"context"
	"fmt"
	"sync"
)

// fakeAPI is the Kubernetes API of the unit tests: pods and
// NetworkAttachmentDefinitions by namespace/name.
type fakeAPI struct {
	mu       sync.Mutex
	pods     map[string]Pod
	nads     map[string]string
	patchErr error
	// statuses are the network-status annotations written, by pod.
	statuses map[string]string
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{pods: map[string]Pod{}, nads: map[string]string{}, statuses: map[string]string{}}
}

// dial is the Dialer of the fake; it fails when the API is nil, as an
// unreachable API server would.
func (f *fakeAPI) dial(string) (API, error) {
	if f == nil {
		return nil, fmt.Errorf("API server unreachable")
	}
	return f, nil
}

func (f *fakeAPI) Pod(_ context.Context, namespace, name string) (Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[namespace+"/"+name]
	if !ok {
		return Pod{}, fmt.Errorf("pods %q not found", name)
	}
	return p, nil
}

func (f *fakeAPI) NetworkConfig(_ context.Context, namespace, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.nads[namespace+"/"+name]
	if !ok {
		return "", fmt.Errorf("network-attachment-definitions %q not found", name)
	}
	return c, nil
}

func (f *fakeAPI) SetNetworkStatus(_ context.Context, namespace, name, uid, status string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.patchErr != nil {
		return f.patchErr
	}
	if p, ok := f.pods[namespace+"/"+name]; !ok || p.UID != uid {
		return fmt.Errorf("pod %s/%s with UID %s not found", namespace, name, uid)
	}
	f.statuses[namespace+"/"+name] = status
	return nil
}

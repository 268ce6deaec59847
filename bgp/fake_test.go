package bgp

import (
	"context"
	"fmt"
	"sync"

	api "github.com/osrg/gobgp/v3/api"
)

// fakeServer records the GoBGP calls of a Speaker and serves a global RIB
// the test fills.
type fakeServer struct {
	mu    sync.Mutex
	calls []string
	peers map[string]*api.Peer
	rib   map[string][]*api.Path // by "ipv4"/"ipv6"
	uuid  int
	comms []string // DisablePeer communications, in order
	fail  map[string]error
}

func newFakeServer() *fakeServer {
	return &fakeServer{peers: map[string]*api.Peer{}, rib: map[string][]*api.Path{}}
}

func (f *fakeServer) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// takeCalls returns and forgets the recorded calls.
func (f *fakeServer) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeServer) StartBgp(context.Context, *api.StartBgpRequest) error { return nil }
func (f *fakeServer) StopBgp(context.Context, *api.StopBgpRequest) error {
	f.record("stop")
	return nil
}

func (f *fakeServer) AddPeer(_ context.Context, r *api.AddPeerRequest) error {
	f.record("add %s down=%v", r.Peer.Conf.NeighborAddress, r.Peer.Conf.AdminDown)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peers[r.Peer.Conf.NeighborAddress] = r.Peer
	return nil
}

func (f *fakeServer) DeletePeer(_ context.Context, r *api.DeletePeerRequest) error {
	f.record("delete %s", r.Address)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.peers, r.Address)
	return nil
}

func (f *fakeServer) DisablePeer(_ context.Context, r *api.DisablePeerRequest) error {
	f.record("disable %s", r.Address)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.comms = append(f.comms, r.Communication)
	return nil
}

func (f *fakeServer) ListPeer(_ context.Context, _ *api.ListPeerRequest, fn func(*api.Peer)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.peers {
		fn(p)
	}
	return nil
}

func (f *fakeServer) AddPath(_ context.Context, r *api.AddPathRequest) (*api.AddPathResponse, error) {
	f.mu.Lock()
	f.uuid++
	id := f.uuid
	f.mu.Unlock()
	f.record("announce %d", id)
	return &api.AddPathResponse{Uuid: []byte{byte(id)}}, nil
}

func (f *fakeServer) DeletePath(_ context.Context, r *api.DeletePathRequest) error {
	f.record("withdraw %d", r.Uuid[0])
	return nil
}

func (f *fakeServer) ListPath(_ context.Context, r *api.ListPathRequest, fn func(*api.Destination)) error {
	fam := "ipv4"
	if r.Family.Afi == api.Family_AFI_IP6 {
		fam = "ipv6"
	}
	f.mu.Lock()
	paths := f.rib[fam]
	f.mu.Unlock()
	fn(&api.Destination{Paths: paths})
	return nil
}

func (f *fakeServer) WatchEvent(context.Context, *api.WatchEventRequest, func(*api.WatchEventResponse)) error {
	return nil
}
func (f *fakeServer) AddDefinedSet(_ context.Context, r *api.AddDefinedSetRequest) error {
	f.record("add set %s %v", r.DefinedSet.Name, r.DefinedSet.List)
	return f.failure("AddDefinedSet")
}

func (f *fakeServer) DeleteDefinedSet(_ context.Context, r *api.DeleteDefinedSetRequest) error {
	f.record("delete set %s", r.DefinedSet.Name)
	return nil
}

// AddPolicy records the attribute actions of each statement.
func (f *fakeServer) AddPolicy(_ context.Context, r *api.AddPolicyRequest) error {
	for _, st := range r.Policy.Statements {
		a := st.Actions
		f.record("add policy %s route=%v communities=%v large=%v localpref=%d", r.Policy.Name, a.RouteAction,
			a.GetCommunity().GetCommunities(), a.GetLargeCommunity().GetCommunities(), a.GetLocalPref().GetValue())
	}
	return f.failure("AddPolicy")
}

func (f *fakeServer) DeletePolicy(_ context.Context, r *api.DeletePolicyRequest) error {
	f.record("delete policy %s", r.Policy.Name)
	return nil
}

func (f *fakeServer) SetPolicyAssignment(_ context.Context, r *api.SetPolicyAssignmentRequest) error {
	var names []string
	for _, p := range r.Assignment.Policies {
		names = append(names, p.Name)
	}
	f.record("assign %s %v", r.Assignment.Direction, names)
	return nil
}

func (f *fakeServer) ResetPeer(_ context.Context, r *api.ResetPeerRequest) error {
	f.record("soft reset %s %s", r.Direction, r.Address)
	return f.failure("ResetPeer")
}

// failure returns the error set for method (nil if none).
func (f *fakeServer) failure(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail[method]
}

// failNext makes method fail until cleared (err nil).
func (f *fakeServer) failNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = map[string]error{}
	}
	f.fail[method] = err
}

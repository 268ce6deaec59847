package bgp

import (
	"context"

	api "github.com/osrg/gobgp/v3/api"
)

// bgpServer is the part of GoBGP's *server.BgpServer the Speaker uses: the
// boundary tests replace with a fake.
type bgpServer interface {
	StartBgp(context.Context, *api.StartBgpRequest) error
	StopBgp(context.Context, *api.StopBgpRequest) error
	AddPeer(context.Context, *api.AddPeerRequest) error
	DeletePeer(context.Context, *api.DeletePeerRequest) error
	DisablePeer(context.Context, *api.DisablePeerRequest) error
	ListPeer(context.Context, *api.ListPeerRequest, func(*api.Peer)) error
	AddPath(context.Context, *api.AddPathRequest) (*api.AddPathResponse, error)
	DeletePath(context.Context, *api.DeletePathRequest) error
	ListPath(context.Context, *api.ListPathRequest, func(*api.Destination)) error
	WatchEvent(context.Context, *api.WatchEventRequest, func(*api.WatchEventResponse)) error
	AddDefinedSet(context.Context, *api.AddDefinedSetRequest) error
	AddPolicy(context.Context, *api.AddPolicyRequest) error
	SetPolicyAssignment(context.Context, *api.SetPolicyAssignmentRequest) error
	DeleteDefinedSet(context.Context, *api.DeleteDefinedSetRequest) error
	DeletePolicy(context.Context, *api.DeletePolicyRequest) error
	ResetPeer(context.Context, *api.ResetPeerRequest) error
}

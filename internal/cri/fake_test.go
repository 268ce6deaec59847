package cri

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime is a CRI runtime service with canned sandboxes, served on a
// unix socket: the boundary the client talks to. Only the calls the client
// makes are implemented; the rest answer Unimplemented.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer

	mu        sync.Mutex
	sandboxes []fakeSandbox
	// ignoreFilter lists every sandbox, as a runtime that drops filters.
	ignoreFilter bool
	// hang makes every call wait for the caller to give up.
	hang bool
	// lists and statuses count the calls.
	lists, statuses int
	// lastList is the last ListPodSandbox request.
	lastList *runtimeapi.ListPodSandboxRequest
}

// fakeSandbox is one sandbox: what the list and the status say.
type fakeSandbox struct {
	id, uid string
	created int64
	state   runtimeapi.PodSandboxState
	mode    runtimeapi.NamespaceMode
	// info is the verbose map; nil: infoDoc(path).
	info map[string]string
	// path is the network namespace's path when info is nil.
	path string
	// statusUID and statusID override what the status answers, when set.
	statusUID, statusID string
	// gone makes the status call answer NotFound; stopped makes it say
	// NOTREADY (the sandbox stopped after the list).
	gone, stopped bool
}

// infoDoc is the verbose info of a sandbox as containerd 1.6 writes it
// (the fields read here and a few beside them), with the network
// namespace at path.
func infoDoc(path string) map[string]string {
	doc := map[string]any{
		"pid": 4242, "processStatus": "running", "netNamespaceClosed": false, "image": "pause",
		"runtimeSpec": map[string]any{
			"ociVersion": "1.0.2-dev",
			"linux": map[string]any{"namespaces": []map[string]any{
				{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"},
				{"type": "network", "path": path},
			}},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return map[string]string{"info": string(b)}
}

func (s fakeSandbox) labels() map[string]string {
	return map[string]string{PodUIDLabel: s.uid, "io.kubernetes.pod.name": "p"}
}

func (f *fakeRuntime) wait(ctx context.Context) error {
	f.mu.Lock()
	hang := f.hang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	return nil
}

func (f *fakeRuntime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "9.9.9", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	f.lastList = req
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		fl := req.GetFilter()
		if !f.ignoreFilter && (fl.GetState() != nil && fl.GetState().GetState() != s.state || fl.GetLabelSelector()[PodUIDLabel] != s.uid) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: s.id, State: s.state, CreatedAt: s.created, Labels: s.labels(),
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: s.uid},
		})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (f *fakeRuntime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses++
	for _, s := range f.sandboxes {
		if s.id != req.GetPodSandboxId() {
			continue
		}
		if s.gone {
			return nil, status.Errorf(codes.NotFound, "an error occurred when try to find sandbox %q: not found", s.id)
		}
		id, uid := s.id, s.uid
		if s.statusID != "" {
			id = s.statusID
		}
		if s.statusUID != "" {
			uid = s.statusUID
		}
		state := s.state
		if s.stopped {
			state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		}
		resp := &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
			Id: id, State: state, CreatedAt: s.created,
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: uid},
			Labels:   map[string]string{PodUIDLabel: uid},
			Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
				Network: s.mode, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD,
			}}},
		}}
		if req.GetVerbose() {
			resp.Info = s.info
			if s.info == nil {
				resp.Info = infoDoc(s.path)
			}
		}
		return resp, nil
	}
	return nil, status.Errorf(codes.NotFound, "sandbox %q not found", req.GetPodSandboxId())
}

// serve runs f on a unix socket in a temporary directory and returns the
// socket's path; the server stops when the test ends.
func (f *fakeRuntime) serve(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("fake CRI server: %v", err)
		}
	})
	return path
}

// dialFake serves f and returns a client of it, closed when the test ends.
func dialFake(t *testing.T, f *fakeRuntime) *Client {
	t.Helper()
	c, err := Dial("unix://" + f.serve(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// calls returns the number of calls made and the last list request.
func (f *fakeRuntime) calls() (int, *runtimeapi.ListPodSandboxRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists + f.statuses, f.lastList
}

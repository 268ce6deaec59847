package cri

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var (
	// ErrNoSandbox: the pod has no ready sandbox on this node (gone, not
	// started, stopped, its namespace closed). Skip the pod.
	ErrNoSandbox = errors.New("no ready pod sandbox on this node")
	// ErrHostNetwork: the pod's sandbox is in the node's network namespace
	// (hostNetwork). Never configure it.
	ErrHostNetwork = errors.New("the pod uses the node's network namespace (hostNetwork)")
)

// PodUIDLabel is the label the kubelet puts on every sandbox: the pod's UID.
const PodUIDLabel = "io.kubernetes.pod.uid"

// maxUID bounds a pod UID (Kubernetes makes 36-byte UUIDs).
const maxUID = 128

// PodNetNS returns the path of the network namespace of the pod's newest
// ready sandbox on this node. Errors wrap ErrNoSandbox or ErrHostNetwork
// when the pod has none to configure (see the package documentation).
func (c *Client) PodNetNS(ctx context.Context, podUID string) (string, error) {
	if err := validUID(podUID); err != nil {
		return "", err
	}
	id, err := c.readySandbox(ctx, podUID)
	if err != nil {
		return "", fmt.Errorf("cri %s: pod %s: %w", c.endpoint, podUID, err)
	}
	path, err := c.sandboxNetNS(ctx, podUID, id)
	if err != nil {
		return "", fmt.Errorf("cri %s: pod %s: sandbox %s: %w", c.endpoint, podUID, id, err)
	}
	return path, nil
}

func validUID(uid string) error {
	if uid == "" || len(uid) > maxUID || strings.IndexFunc(uid, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0 {
		return fmt.Errorf("cri: pod UID %q: want a non-empty printable string of at most %d bytes without spaces", uid, maxUID)
	}
	return nil
}

// readySandbox returns the ID of the pod's newest ready sandbox. The
// runtime's filter is applied again here: a runtime that ignored it must
// not hand out another pod's sandbox.
func (c *Client) readySandbox(ctx context.Context, podUID string) (string, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{PodUIDLabel: podUID},
	}})
	if err != nil {
		return "", fmt.Errorf("list sandboxes: %w", err)
	}
	var newest *runtimeapi.PodSandbox
	for _, s := range resp.GetItems() {
		if s.GetId() == "" || s.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || !ownedBy(s.GetLabels(), s.GetMetadata(), podUID) {
			continue
		}
		// The newest wins; equal times are broken by ID so that every call
		// picks the same one.
		if newest == nil || s.GetCreatedAt() > newest.GetCreatedAt() ||
			(s.GetCreatedAt() == newest.GetCreatedAt() && s.GetId() > newest.GetId()) {
			newest = s
		}
	}
	if newest == nil {
		return "", ErrNoSandbox
	}
	return newest.GetId(), nil
}

// ownedBy reports whether a sandbox's label and metadata both name the pod.
func ownedBy(labels map[string]string, meta *runtimeapi.PodSandboxMetadata, podUID string) bool {
	return labels[PodUIDLabel] == podUID && meta.GetUid() == podUID
}

// sandboxNetNS asks for the sandbox's verbose status and returns its
// network namespace path.
func (c *Client) sandboxNetNS(ctx context.Context, podUID, id string) (string, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if status.Code(err) == codes.NotFound {
		// Removed between the list and this call.
		return "", fmt.Errorf("%w: %w", ErrNoSandbox, err)
	}
	if err != nil {
		return "", fmt.Errorf("sandbox status: %w", err)
	}
	st := resp.GetStatus()
	switch {
	case st == nil:
		return "", errors.New("sandbox status: the runtime gave no status")
	case st.GetId() != id:
		return "", fmt.Errorf("sandbox status: the runtime answered for sandbox %q", st.GetId())
	case !ownedBy(st.GetLabels(), st.GetMetadata(), podUID):
		return "", fmt.Errorf("sandbox status: the sandbox belongs to pod %q (label %q)", st.GetMetadata().GetUid(), st.GetLabels()[PodUIDLabel])
	case st.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY:
		return "", fmt.Errorf("%w: the sandbox is %s", ErrNoSandbox, st.GetState())
	}
	switch mode := st.GetLinux().GetNamespaces().GetOptions().GetNetwork(); mode {
	case runtimeapi.NamespaceMode_POD:
	case runtimeapi.NamespaceMode_NODE:
		return "", ErrHostNetwork
	default:
		return "", fmt.Errorf("network namespace mode %s: want POD", mode)
	}
	return netNSFromInfo(resp.GetInfo())
}

package cri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// callTimeout bounds every call to the runtime: a runtime that hangs
	// must not stall the daemon's apply loop. Local calls answer in
	// milliseconds; this leaves room for a loaded node.
	callTimeout = 10 * time.Second
	// maxMessage is the largest answer accepted (the kubelet's limit for
	// CRI): a verbose sandbox status carries the whole runtime spec.
	maxMessage = 16 << 20
	// maxSocketPath is the longest path a unix socket address holds
	// (sun_path is 108 bytes with its terminating NUL).
	maxSocketPath = 107
)

// Client talks to one runtime's CRI socket. It is safe for concurrent use.
type Client struct {
	endpoint string
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
	timeout  time.Duration
}

// Dial returns a client of the runtime at endpoint: "unix:///abs/path" or
// a plain absolute path. It does not connect (the first call does, and
// reconnects after the runtime restarts); call Version to check the
// socket. No TLS: the socket's file permissions are the access control.
func Dial(endpoint string) (*Client, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	// "passthrough" hands the target to the dialer untouched, and the
	// dialer ignores it for the validated path: no URL parsing by grpc of
	// a path that may hold '%' or spaces.
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	conn, err := grpc.NewClient("passthrough:///cri",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial),
		grpc.WithAuthority("localhost"),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)),
		// Reconnect within seconds of a runtime restart (grpc's default
		// backoff grows to two minutes).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("cri %s: %w", path, err)
	}
	return &Client{endpoint: path, conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn), timeout: callTimeout}, nil
}

// socketPath validates a CRI endpoint and returns its socket's path.
func socketPath(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("cri endpoint: empty (want unix:///path/to/runtime.sock)")
	}
	path := endpoint
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", fmt.Errorf("cri endpoint %q: %w", endpoint, err)
		}
		if u.Scheme != "unix" {
			return "", fmt.Errorf("cri endpoint %q: scheme %q is not supported (want unix:///path/to/runtime.sock)", endpoint, u.Scheme)
		}
		if u.Host != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return "", fmt.Errorf("cri endpoint %q: want unix:///absolute/path (three slashes), without host, query or fragment", endpoint)
		}
		path = u.Path
	}
	switch {
	case !filepath.IsAbs(path):
		return "", fmt.Errorf("cri endpoint %q: want an absolute path", endpoint)
	case filepath.Clean(path) != path:
		return "", fmt.Errorf("cri endpoint %q: path %q is not clean (want %q)", endpoint, path, filepath.Clean(path))
	case len(path) > maxSocketPath:
		return "", fmt.Errorf("cri endpoint %q: path longer than %d bytes, too long for a unix socket", endpoint, maxSocketPath)
	}
	return path, nil
}

// call returns ctx bounded by the client's call timeout.
func (c *Client) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// Version returns the runtime's name and version and the CRI version it
// speaks, e.g. "containerd 1.6.20 (CRI v1)".
func (c *Client) Version(ctx context.Context) (string, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("cri %s: version: %w", c.endpoint, err)
	}
	if v.GetRuntimeName() == "" {
		return "", fmt.Errorf("cri %s: version: the runtime gave no name", c.endpoint)
	}
	return fmt.Sprintf("%s %s (CRI %s)", v.GetRuntimeName(), v.GetRuntimeVersion(), v.GetRuntimeApiVersion()), nil
}

// Close releases the connection. Calls after Close fail.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("cri %s: close: %w", c.endpoint, err)
	}
	return nil
}

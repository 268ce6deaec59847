package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check reports whether every daemon of the node runs and its health
// endpoints answer.
func (n *Node) Check(ctx context.Context) error {
	var errs []error
	for _, dm := range n.daemons() {
		if _, ok := n.dirs.running(dm); !ok {
			errs = append(errs, fmt.Errorf("%s does not run (log: %s)", dm.name, n.dirs.log(dm.name)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, url := range []string{apiServerURL() + "/readyz", "http://127.0.0.1:10248/healthz", "http://127.0.0.1:10256/healthz"} {
		if ok, err := n.httpOK(url, false)(ctx); !ok {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RestartKubelet stops the kubelet (SIGTERM: the pods keep running) and
// starts it again; it returns once the kubelet's health endpoint answers.
func (n *Node) RestartKubelet(ctx context.Context) (time.Duration, error) {
	return n.restart(ctx, n.kubelet(), "http://127.0.0.1:10248/healthz")
}

// RestartContainerd stops containerd (SIGTERM: the containers keep
// running under their shims) and starts it again; it returns once
// containerd answers.
func (n *Node) RestartContainerd(ctx context.Context) (time.Duration, error) {
	dm := n.containerd()
	start := time.Now()
	if err := n.dirs.stop(dm); err != nil {
		return 0, err
	}
	if _, err := n.dirs.start(dm); err != nil {
		return 0, err
	}
	err := n.poll(ctx, "containerd answers", &dm, startTimeout, func(ctx context.Context) (bool, error) {
		_, err := n.ctr(ctx, "version")
		return err == nil, err
	})
	return time.Since(start), err
}

func (n *Node) restart(ctx context.Context, dm daemon, health string) (time.Duration, error) {
	start := time.Now()
	if err := n.dirs.stop(dm); err != nil {
		return 0, err
	}
	if _, err := n.dirs.start(dm); err != nil {
		return 0, err
	}
	err := n.poll(ctx, dm.name+" healthy", &dm, startTimeout, n.httpOK(health, false))
	return time.Since(start), err
}

// SetUnsafeSysctls restarts the kubelet allowing sllbrd's unsafe sysctls
// (allow) or none of them, as on a node whose administrator did not allow
// them; the choice lasts until the next call.
func (n *Node) SetUnsafeSysctls(ctx context.Context, allow bool) error {
	want := []string{}
	if allow {
		want = slices.Clone(SLLBRSysctls)
	}
	n.st.AllowedUnsafeSysctls = want
	if err := n.saveState(); err != nil {
		return err
	}
	if err := n.writeConfigs(); err != nil {
		return err
	}
	_, err := n.RestartKubelet(ctx)
	return err
}

// ContainerPID returns the PID (in the host's PID namespace) of the main
// process of a running container, by its ID in the pod's status
// (containerd://<id> or <id>).
func (n *Node) ContainerPID(ctx context.Context, containerID string) (int, error) {
	id := strings.TrimPrefix(containerID, "containerd://")
	out, err := n.ctr(ctx, "tasks", "list")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			pid, err := strconv.Atoi(f[1])
			if err != nil || pid <= 1 {
				return 0, fmt.Errorf("container %s: PID %q", id, f[1])
			}
			if f[2] != "RUNNING" {
				return 0, fmt.Errorf("container %s is %s", id, f[2])
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("container %s: containerd has no task of that ID", id)
}

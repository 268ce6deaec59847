package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/internal/mountinfo"
)

// drainTimeout bounds Down's wait for the kubelet to stop the pods.
const drainTimeout = 90 * time.Second

// Down removes the node whose state is in dirs, and whatever a failed Up
// left: the pods (deleted through the API so that the kubelet tears down
// their networks, when the node still runs), the daemons (by PID file, then
// any process whose command line names the node's directories, such as
// containerd's shims), the pods' cgroups, kube-proxy's nftables tables and
// the kubelet's iptables chains, the
// mounts under the directories, the bridges and the directories. A node
// that is not there is no error.
func Down(ctx context.Context, dirs Dirs, log Logger) error {
	if err := dirs.validate(); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if log == nil {
		log = discard{}
	}
	start := time.Now()
	var errs []error
	n, err := Open(dirs, log)
	if err == nil {
		if err := n.drainPods(ctx); err != nil {
			log.Logf("node: pods not stopped by the kubelet (%v): killing them", err)
		}
		ds := n.daemons()
		slices.Reverse(ds)
		for _, dm := range ds {
			if err := dirs.stop(dm); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs,
		killOwned(dirs),
		removeCgroupParent(),
		deleteKubeProxyTables(ctx),
		deleteKubeletChains(ctx),
		unmountUnder(dirs.State, dirs.Run),
		deleteBridges(ctx),
		os.RemoveAll(dirs.State),
		os.RemoveAll(dirs.Run),
	)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node: down: %w", err)
	}
	if n != nil {
		log.Logf("node: %s taken down in %v", Name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// drainPods stops the controllers that would replace pods, deletes every
// pod and waits until the kubelet has stopped them (and run each one's CNI
// DEL), when the API server and the kubelet still run.
func (n *Node) drainPods(ctx context.Context) error {
	api, kubelet := n.apiserver(), n.kubelet()
	if _, ok := n.dirs.running(api); !ok {
		return errors.New("kube-apiserver does not run")
	}
	if _, ok := n.dirs.running(kubelet); !ok {
		return errors.New("the kubelet does not run")
	}
	for _, dm := range []daemon{n.controllerManager(), n.scheduler()} {
		if err := n.dirs.stop(dm); err != nil {
			return err
		}
	}
	client, err := n.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ns := range nss.Items {
		err := client.CoreV1().Pods(ns.Name).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](2)}, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("delete the pods of %s: %w", ns.Name, err)
		}
	}
	return n.poll(ctx, "every pod stopped", &kubelet, drainTimeout, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d pods left", len(pods.Items))
	})
}

// killOwned kills every process whose command line names the node's
// directories (containerd's shims, daemons without a PID file).
func killOwned(dirs Dirs) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, dir := range []string{dirs.State, dirs.Run} {
			if bytes.Contains(cmdline, []byte(dir+"/")) || bytes.Contains(cmdline, []byte(dir+"\x00")) {
				pids = append(pids, pid)
				break
			}
		}
	}
	var errs []error
	for _, pid := range pids {
		if err := terminate(pid, 5*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unmountUnder unmounts every mount point below the directories, deepest
// first (the kubelet's volumes, containerd's root file systems and pod
// network namespaces).
func unmountUnder(dirs ...string) error {
	points, err := mountPoints()
	if err != nil {
		return err
	}
	var under []string
	for _, p := range points {
		for _, d := range dirs {
			if p == d || strings.HasPrefix(p, d+"/") {
				under = append(under, p)
				break
			}
		}
	}
	slices.SortFunc(under, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	under = slices.Compact(under)
	var errs []error
	for _, p := range under {
		// A mount may be stacked several times (the kubelet bind-mounts its
		// root onto itself): unmount until it is gone.
		for range 8 {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
					errs = append(errs, fmt.Errorf("node: umount %s: %w", p, err))
				}
				break
			}
		}
	}
	return errors.Join(errs...)
}

// mountPoints lists the mount points of this mount namespace.
func mountPoints() ([]string, error) {
	table, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	var out []string
	for _, m := range mountinfo.Parse(table) {
		out = append(out, m.Point)
	}
	return out, nil
}

package cri

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/harness/node"
)

// TestIntegrationCRINetNS resolves pods' network namespaces through the
// node's real containerd: a pod's path is the namespace its container runs
// in (same inode, and the pod's IP is on an interface seen by a netlink
// socket opened in it); once the pod is deleted the pod has no sandbox; a
// hostNetwork pod is refused as such.
func TestIntegrationCRINetNS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	n, pause := testNode(t, ctx)
	kube, err := n.Client()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial("unix://" + n.Dirs().ContainerdSocket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil || !strings.HasPrefix(v, "containerd ") {
		t.Fatalf("Version = %q, %v; want containerd's", v, err)
	}
	t.Logf("runtime: %s", v)

	suffix := rand.String(5)
	pod := runPod(t, ctx, kube, n, "cri-netns-"+suffix, pause, false)
	path, err := c.PodNetNS(ctx, string(pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod %s: network namespace %s", pod.Name, path)
	pid, err := n.ContainerPID(ctx, pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := nsInode(t, path), nsInode(t, fmt.Sprintf("/proc/%d/ns/net", pid)); a != b {
		t.Errorf("%s is namespace %v, the container (PID %d) runs in %v", path, a, pid, b)
	}
	if a, b := nsInode(t, path), nsInode(t, "/proc/self/ns/net"); a == b {
		t.Errorf("%s is the test's own network namespace", path)
	}
	assertPodIPsIn(t, path, pod)

	deletePod(t, ctx, kube, pod.Name)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := c.PodNetNS(ctx, string(pod.UID))
		if errors.Is(err, ErrNoSandbox) {
			t.Logf("after the delete: %v", err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PodNetNS of the deleted pod: %v, want ErrNoSandbox", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	host := runPod(t, ctx, kube, n, "cri-hostnet-"+suffix, pause, true)
	if path, err := c.PodNetNS(ctx, string(host.UID)); !errors.Is(err, ErrHostNetwork) {
		t.Errorf("PodNetNS of a hostNetwork pod = %q, %v; want ErrHostNetwork", path, err)
	} else {
		t.Logf("hostNetwork pod: %v", err)
	}
	deletePod(t, ctx, kube, host.Name)
}

// nsInode identifies the namespace a path names (device and inode of nsfs).
func nsInode(t *testing.T, path string) [2]uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return [2]uint64{st.Dev, st.Ino}
}

// assertPodIPsIn checks that each of the pod's IPs is on an interface of
// the namespace at path, read through a netlink socket opened in it.
func assertPodIPsIn(t *testing.T, path string, pod *corev1.Pod) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	conn, err := rtnetlink.Dial(&netlink.Config{NetNS: int(f.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs, err := conn.Address.List()
	if err != nil {
		t.Fatal(err)
	}
	have := map[netip.Addr]bool{}
	for _, m := range msgs {
		if m.Attributes != nil {
			if a, ok := netip.AddrFromSlice(m.Attributes.Address); ok {
				have[a.Unmap()] = true
			}
		}
	}
	if len(pod.Status.PodIPs) == 0 {
		t.Fatalf("pod %s has no IP", pod.Name)
	}
	for _, ip := range pod.Status.PodIPs {
		a, err := netip.ParseAddr(ip.IP)
		if err != nil || !have[a] {
			t.Errorf("pod IP %s is not on an interface of %s (%v)", ip.IP, path, have)
		}
	}
}

// runPod creates a pod of the pause image (deleted by name when the test
// ends) and returns it once it is Ready.
func runPod(t *testing.T, ctx context.Context, kube kubernetes.Interface, n *node.Node, name, image string, hostNetwork bool) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: node.Namespace},
		Spec: corev1.PodSpec{
			NodeName: node.Name, HostNetwork: hostNetwork, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "pause", Image: image, ImagePullPolicy: corev1.PullNever}},
		},
	}
	if _, err := kube.CoreV1().Pods(node.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePod(t, context.Background(), kube, name) })
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := kube.CoreV1().Pods(node.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && podReady(got) {
			return got
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
			}
			t.Fatalf("pod %s not Ready in 2 minutes: %v (kubelet log: %s)", name, err, n.LogPath("kubelet"))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return len(p.Status.ContainerStatuses) > 0
		}
	}
	return false
}

// deletePod deletes a pod by name at once and waits until it is gone.
func deletePod(t *testing.T, ctx context.Context, kube kubernetes.Interface, name string) {
	t.Helper()
	pods := kube.CoreV1().Pods(node.Namespace)
	err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("delete pod %s: %v", name, err)
		return
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := pods.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("pod %s still there 2 minutes after its delete", name)
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

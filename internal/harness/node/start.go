package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// poll calls check every interval until it returns true, an error that is
// not errRetry, the daemon exits, or timeout passes. The last retry reason
// is in the timeout error.
func (n *Node) poll(ctx context.Context, what string, dm *daemon, timeout time.Duration, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := check(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if dm != nil {
			if _, running := n.dirs.running(*dm); !running {
				return fmt.Errorf("%s exited: %s", dm.name, n.logTail(dm.name))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %v (last: %v)", what, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// logTail is the end of a daemon's log, for errors.
func (n *Node) logTail(name string) string {
	b, err := os.ReadFile(n.dirs.log(name))
	if err != nil {
		return err.Error()
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// httpOK is a check that GETs url (with the node's CA and the admin's
// client certificate for https) and wants 200.
func (n *Node) httpOK(url string, insecure bool) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{}}
		if strings.HasPrefix(url, "https:") {
			if insecure {
				// The controller manager's and the scheduler's self-signed
				// serving certificates, on loopback only.
				tr.TLSClientConfig.InsecureSkipVerify = true
			} else {
				caPEM, err := readCA(n.dirs)
				if err != nil {
					return false, err
				}
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(caPEM)
				cert, err := tls.LoadX509KeyPair(n.dirs.pki(adminID.file+".crt"), n.dirs.pki(adminID.file+".key"))
				if err != nil {
					return false, err
				}
				tr.TLSClientConfig.RootCAs, tr.TLSClientConfig.Certificates = pool, []tls.Certificate{cert}
			}
		}
		client := &http.Client{Timeout: 3 * time.Second, Transport: tr}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", url, resp.Status)
		}
		return true, nil
	}
}

func (n *Node) startAndWait(ctx context.Context, dm daemon, url string, insecure bool) error {
	if _, err := n.dirs.start(dm); err != nil {
		return err
	}
	return n.poll(ctx, dm.name+" healthy", &dm, startTimeout, n.httpOK(url, insecure))
}

func (n *Node) startEtcd(ctx context.Context) error {
	return n.startAndWait(ctx, n.etcd(), fmt.Sprintf("http://127.0.0.1:%d/health", etcdClientPort), false)
}

func (n *Node) startAPIServer(ctx context.Context) error {
	return n.startAndWait(ctx, n.apiserver(), apiServerURL()+"/readyz", false)
}

func (n *Node) startControllers(ctx context.Context) error {
	if err := n.startAndWait(ctx, n.controllerManager(), "https://127.0.0.1:10257/healthz", true); err != nil {
		return err
	}
	return n.startAndWait(ctx, n.scheduler(), "https://127.0.0.1:10259/healthz", true)
}

// ctr runs containerd's client against the node's containerd, in the
// namespace of the CRI plugin.
func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	argv := append([]string{"--address", n.dirs.ContainerdSocket(), "--namespace", "k8s.io"}, args...)
	out, err := exec.CommandContext(ctx, "ctr", argv...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

func (n *Node) startContainerd(ctx context.Context, images []Image) error {
	dm := n.containerd()
	if _, err := n.dirs.start(dm); err != nil {
		return err
	}
	err := n.poll(ctx, "containerd answers", &dm, startTimeout, func(ctx context.Context) (bool, error) {
		_, err := n.ctr(ctx, "version")
		return err == nil, err
	})
	if err != nil {
		return err
	}
	for _, im := range images {
		if err := n.ImportImage(ctx, im); err != nil {
			return err
		}
	}
	return nil
}

// ImportImage imports an OCI archive (one image, its index naming it by
// tag, as hack/image writes) into containerd's CRI namespace as im.Ref
// (name:tag, the tag the archive's), unpacked for the overlayfs snapshotter.
func (n *Node) ImportImage(ctx context.Context, im Image) error {
	i := strings.LastIndexByte(im.Ref, ':')
	if i <= 0 || strings.Contains(im.Ref[i:], "/") {
		return fmt.Errorf("import %s: want a reference name:tag", im.Ref)
	}
	if _, err := n.ctr(ctx, "images", "import", "--base-name", im.Ref[:i], im.Archive); err != nil {
		return fmt.Errorf("import %s: %w", im.Ref, err)
	}
	out, err := n.ctr(ctx, "images", "list", "--quiet", "name=="+im.Ref)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != im.Ref {
		return fmt.Errorf("import %s from %s: containerd has no image of that name (is the archive's tag %q?)", im.Ref, im.Archive, im.Ref[i+1:])
	}
	return nil
}

func (n *Node) startKubelet(ctx context.Context) error {
	dm := n.kubelet()
	if _, err := n.dirs.start(dm); err != nil {
		return err
	}
	client, err := n.Client()
	if err != nil {
		return err
	}
	return n.poll(ctx, "node Ready", &dm, readyTimeout, func(ctx context.Context) (bool, error) {
		node, err := client.CoreV1().Nodes().Get(ctx, Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, fmt.Errorf("Ready %s: %s", c.Status, c.Message)
			}
		}
		return false, errors.New("no Ready condition yet")
	})
}

func (n *Node) startKubeProxy(ctx context.Context) error {
	return n.startAndWait(ctx, n.kubeProxy(), "http://127.0.0.1:10256/healthz", false)
}

// waitDefaultNamespace waits for what pods of the default namespace need
// from the controller manager: the default ServiceAccount and the
// kube-root-ca.crt ConfigMap of projected service-account tokens.
func (n *Node) waitDefaultNamespace(ctx context.Context) error {
	client, err := n.Client()
	if err != nil {
		return err
	}
	return n.poll(ctx, "default ServiceAccount and kube-root-ca.crt", nil, readyTimeout, func(ctx context.Context) (bool, error) {
		if _, err := client.CoreV1().ServiceAccounts(Namespace).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, err
		}
		_, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, err
		}
		return err == nil, err
	})
}

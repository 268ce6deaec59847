package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Logger receives progress messages; testing.TB satisfies it.
type Logger interface {
	Logf(format string, args ...any)
}

type discard struct{}

func (discard) Logf(string, ...any) {}

// state is what Up decided, kept in the state directory so that later
// programs (make node-down, a test, a restart of the kubelet) act on the
// same node.
type state struct {
	// Bin holds the Kubernetes binaries (hack/kube-assets.sh).
	Bin string `json:"bin"`
	// PauseImage is containerd's sandbox image reference.
	PauseImage string `json:"pauseImage"`
	// AllowedUnsafeSysctls is the kubelet's allowedUnsafeSysctls.
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls"`
}

// Node is a node Up brought up, or one Open found running.
type Node struct {
	dirs Dirs
	st   state
	log  Logger
}

// Open returns the node whose state is in dirs, as Up left it. It does not
// check that the node runs (Check does).
func Open(dirs Dirs, log Logger) (*Node, error) {
	if err := dirs.validate(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(dirs.stateFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no node in %s (make node-up)", dirs.State)
	}
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n := &Node{dirs: dirs, log: log}
	if n.log == nil {
		n.log = discard{}
	}
	if err := json.Unmarshal(b, &n.st); err != nil {
		return nil, fmt.Errorf("node: %s: %w", dirs.stateFile(), err)
	}
	return n, nil
}

func (n *Node) saveState() error {
	b, err := json.MarshalIndent(n.st, "", "  ")
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := os.WriteFile(n.dirs.stateFile(), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// Dirs returns the node's directories.
func (n *Node) Dirs() Dirs { return n.dirs }

// Kubeconfig is the path of the administrator's kubeconfig.
func (n *Node) Kubeconfig() string { return n.dirs.Kubeconfig() }

// Kubectl is the path of the kubectl built with the node's binaries.
func (n *Node) Kubectl() string { return n.st.Bin + "/kubectl" }

// LogPath is the log file of a daemon of the node ("kubelet", ...).
func (n *Node) LogPath(daemon string) string { return n.dirs.log(daemon) }

// AllowedUnsafeSysctls is what the kubelet allows now.
func (n *Node) AllowedUnsafeSysctls() []string { return slices.Clone(n.st.AllowedUnsafeSysctls) }

// AdminConfig returns a client configuration of the administrator.
func (n *Node) AdminConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", n.dirs.Kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// Client returns a clientset of the administrator.
func (n *Node) Client() (kubernetes.Interface, error) {
	cfg, err := n.AdminConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

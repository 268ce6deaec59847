package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sllbrd/sllbrd/internal/harness/multinet"
)

// ipamRanges is host-local's "ranges" for nw: one range set per subnet.
func (n *Node) ipam(nw Network) map[string]any {
	var ranges [][]map[string]string
	for i, s := range nw.Subnets {
		ranges = append(ranges, []map[string]string{{
			"subnet": s.String(), "rangeStart": nw.PodRanges[i][0].String(), "rangeEnd": nw.PodRanges[i][1].String(),
		}})
	}
	return map[string]any{"type": "host-local", "ranges": ranges, "dataDir": n.dirs.ipamDir()}
}

// networkConfig is the CNI configuration list of one of the node's
// networks: a port of its bridge with an address from its pod range. The
// pod network's bridge is the pods' default gateway (NodeIP); the others'
// bridges have no address.
func (n *Node) networkConfig(nw Network) map[string]any {
	name := nw.NAD
	bridge := map[string]any{"type": "bridge", "bridge": nw.Bridge, "ipam": n.ipam(nw)}
	if nw.NAD == "" {
		name = nw.Bridge
		bridge["isGateway"] = true
		bridge["isDefaultGateway"] = true
	}
	return map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{bridge}}
}

// multinetConfig is the only configuration in containerd's CNI directory:
// multinet, with the pod network as the default network it delegates to.
func (n *Node) multinetConfig() ([]byte, error) {
	def, err := json.Marshal(n.networkConfig(PodNetwork))
	if err != nil {
		return nil, fmt.Errorf("cni: %w", err)
	}
	c := multinet.Config{
		CNIVersion: multinet.CNIVersion, Name: multinet.TypeName, Type: multinet.TypeName,
		Kubeconfig: n.dirs.pki(multinetID.file + ".kubeconfig"), CacheDir: filepath.Join(n.dirs.State, "cni", "multinet"),
		LogFile: n.dirs.log("multinet"), DefaultNetwork: def,
	}
	b, err := c.Marshal()
	if err != nil {
		return nil, fmt.Errorf("cni: %w", err)
	}
	return b, nil
}

// installCNI fills containerd's CNI directories: links to Debian's plugins,
// the multinet binary plugin, and multinet's configuration.
func (n *Node) installCNI(plugin string) error {
	for _, dir := range []string{n.dirs.cniBin(), n.dirs.cniConf(), n.dirs.ipamDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cni: %w", err)
		}
	}
	var errs []error
	for _, p := range cniPlugins {
		src := filepath.Join(CNIPluginsDir, p)
		if _, err := os.Stat(src); err != nil {
			errs = append(errs, fmt.Errorf("cni: plugin %s: %w (make deps installs containernetworking-plugins)", p, err))
			continue
		}
		if err := os.Symlink(src, filepath.Join(n.dirs.cniBin(), p)); err != nil {
			errs = append(errs, fmt.Errorf("cni: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b, err := os.ReadFile(plugin)
	if err != nil {
		return fmt.Errorf("cni: multinet: %w", err)
	}
	if err := os.WriteFile(filepath.Join(n.dirs.cniBin(), multinet.TypeName), b, 0o755); err != nil {
		return fmt.Errorf("cni: %w", err)
	}
	conf, err := n.multinetConfig()
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(n.dirs.cniConf(), multinet.ConfFileName), conf)
}

func writeFile(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

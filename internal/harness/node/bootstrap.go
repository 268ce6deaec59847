package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/multinet"
)

// bootstrap creates what the node offers besides its daemons: the
// NetworkAttachmentDefinition CRD, multinet's RBAC, and the NADs of the
// secondary networks in Namespace.
func (n *Node) bootstrap(ctx context.Context) error {
	cfg, err := n.AdminConfig()
	if err != nil {
		return err
	}
	c, err := kubetest.NewClient(cfg)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	crd := n.dirs.conf("network-attachment-definitions.yaml")
	if err := os.WriteFile(crd, multinet.CRDYAML(), 0o644); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err := c.InstallCRDs(ctx, crd); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	objs, err := kubetest.DecodeObjects(append(multinet.ClusterRoleYAML(), "\n---\n"+multinetBinding...))
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	for _, nw := range Networks() {
		if nw.NAD == "" {
			continue
		}
		nad, err := n.nad(nw)
		if err != nil {
			return err
		}
		objs = append(objs, nad)
	}
	for _, o := range objs {
		if _, err := c.Create(ctx, Namespace, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bootstrap: %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// multinetBinding gives multinet's user (multinetID) its ClusterRole.
var multinetBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: sllbrd-node-multinet
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ` + multinet.ClusterRoleName + `
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: ` + multinetID.user + "\n"

// nad is the NetworkAttachmentDefinition of a secondary network.
func (n *Node) nad(nw Network) (*unstructured.Unstructured, error) {
	conf, err := json.Marshal(n.networkConfig(nw))
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": multinet.NADGroup + "/" + multinet.NADVersion,
		"kind":       multinet.NADKind,
		"metadata":   map[string]any{"name": nw.NAD, "namespace": Namespace},
		"spec":       map[string]any{"config": string(conf)},
	}}, nil
}

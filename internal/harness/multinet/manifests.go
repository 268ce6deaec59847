package multinet

import (
	"bytes"
	_ "embed" // the manifests below
)

var (
	//go:embed networkattachmentdefinition-crd.yaml
	crdYAML []byte
	//go:embed clusterrole.yaml
	clusterRoleYAML []byte
)

// CRDYAML returns the NetworkAttachmentDefinition CustomResourceDefinition
// (k8s.cni.cncf.io/v1, namespaced, spec.config a string).
func CRDYAML() []byte { return bytes.Clone(crdYAML) }

// ClusterRoleYAML returns the ClusterRole ClusterRoleName that multinet's
// identity needs: pods get and patch, network-attachment-definitions get.
func ClusterRoleYAML() []byte { return bytes.Clone(clusterRoleYAML) }

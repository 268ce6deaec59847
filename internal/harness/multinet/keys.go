package multinet

// Names the node and the pods share with multinet.
const (
	// TypeName is multinet's CNI plugin type: the name of its binary in the
	// runtime's CNI bin dir and the "type" of its configuration.
	TypeName = "multinet"
	// ConfFileName is the name the node gives multinet's configuration in
	// the runtime's CNI conf dir; it must be the only file there.
	ConfFileName = "00-multinet.conf"
	// CNIVersion is the CNI spec version of multinet's own configuration
	// and of the results it returns.
	CNIVersion = "1.0.0"

	// NetworksAnnotation on a pod asks for secondary networks (Multus'
	// network selection annotation).
	NetworksAnnotation = "k8s.v1.cni.cncf.io/networks"
	// NetworkStatusAnnotation on a pod is what multinet attached (Multus'
	// network-status annotation).
	NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"

	// NADGroup, NADVersion and NADResource name the
	// NetworkAttachmentDefinition API (the CRD of CRDYAML).
	NADGroup    = "k8s.cni.cncf.io"
	NADVersion  = "v1"
	NADResource = "network-attachment-definitions"
	NADKind     = "NetworkAttachmentDefinition"

	// ClusterRoleName is the ClusterRole of ClusterRoleYAML, to be bound to
	// the identity of multinet's kubeconfig.
	ClusterRoleName = "multinet"
)

// delegateVersions are the CNI versions accepted in delegated network
// configurations (and so in their results).
var delegateVersions = []string{"0.4.0", "1.0.0"}

// maxNetworks bounds the secondary networks one pod may request.
const maxNetworks = 32

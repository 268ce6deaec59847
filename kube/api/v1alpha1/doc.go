// Package v1alpha1 holds the Go types of the sllbrd custom resources, group
// meridio.experiment.gateway.api.poc, version v1alpha1:
//
//   - L34Route: which packets (destination VIP, source, ports, protocols, byte
//     matches) a Gateway steers to which Service, with a priority.
//   - GatewayRouter: a data-centre gateway the LB peers with over BGP, or uses
//     as a static next hop, optionally supervised by BFD.
//
// The kubebuilder markers (OpenAPI bounds and CEL rules) make the API server
// reject invalid objects; kube/translate checks the same rules again because
// objects read from manifest files never pass an API server. The CEL rules
// of an L34Route's destinationCIDRs say model/vip's rule of a VIP;
// TestIntegrationCRDRefusesWhatIsNoVIP holds them to it on a real API
// server. Defaults given in
// markers are applied by the API server only; the translator applies the same
// values when a field is empty (see the constants below).
//
// zz_generated.deepcopy.go and deploy/crds/*.yaml are generated; regenerate
// from the module root with the go:generate commands below.
//
// +kubebuilder:object:generate=true
// +groupName=meridio.experiment.gateway.api.poc
package v1alpha1

//go:generate sh -c "cd ../../.. && go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.20.1 object paths=./kube/api/... crd:crdVersions=v1 output:crd:artifacts:config=deploy/crds"

// Package sllbr builds the SLLBR Deployment of one Gateway: the Deployment
// template (the seed's "Resource Template": a Deployment the user may edit,
// by default deploy/sllbrd/deployment.yaml) made specific to the Gateway,
// sized by the Gateway's parameters (the seed's SLLBRConfig, in the
// ConfigMap named by spec.infrastructure.parametersRef). It performs no API
// calls.
//
// What Render sets, whatever the template says:
//   - name: the template's name with its app.kubernetes.io/instance suffix
//     replaced by the Gateway's name (sllbrd-sllb-a becomes sllbrd-<gateway>),
//     or the template's name + "-<gateway>" when it has no such suffix;
//     namespace: the Gateway's; one owner reference, to the Gateway
//     (controller), so the Deployment is deleted with it;
//   - labels of the Deployment and its pods: the template's, then the
//     Gateway's spec.infrastructure.labels, then app.kubernetes.io/instance,
//     app.kubernetes.io/component=sllbr, app.kubernetes.io/managed-by and
//     gateway.networking.k8s.io/gateway-name=<gateway>; the selector is
//     exactly the last two (component and gateway name), which also select
//     the SLLBR pods of a Gateway for anyone else (kube.LabelGatewayName,
//     kube.LabelComponent);
//   - annotations of the Deployment and its pods: the template's, without
//     its Multus networks annotation, then the Gateway's
//     spec.infrastructure.annotations (so the Multus networks of the pods are
//     the Gateway's k8s.v1.cni.cncf.io/networks);
//   - app.kubernetes.io/instance in the label selectors of the pods'
//     (anti-)affinity terms and topology spread constraints: the Gateway;
//   - the container named sllbrd: --gateway=<gateway> (replacing the
//     template's), and the parameters' resources when given;
//   - replicas: the parameters' when given, else the template's;
//   - the annotation meridio-experiment/sllbr-hash: a hash of all the above,
//     by which the controller sees that what it renders changed.
//
// The controller writes the rendered Deployment with server-side apply
// (Apply: the rendered fields, no status), so the fields Render sets are
// the controller's field manager's and nothing else is: other tools'
// labels, annotations and fields stay. Drifted says when to apply again:
// the hash changed, or a field the controller set is no longer its own
// with its value (someone changed it; applying reverts it).
//
// The image of the sllbrd container is the template's when it names one;
// when it names none, SetDefaultImage gives it the controller's own image
// (deploy/sllbrd/deployment.yaml names none, so the SLLBR pods run the
// release the controller runs). Everything else (probes, security context,
// sysctls, volumes, strategy) is the template's, untouched.
//
// Which pods are a Gateway's SLLBR pods is decided by the owner chain, never
// by labels: PodOf follows pod -> ReplicaSet -> Deployment by controller
// references and UIDs.
package sllbr

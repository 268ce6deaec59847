package deploy

import _ "embed" // for the template below

// SLLBRDeploymentTemplate is deploy/sllbrd/deployment.yaml: the SLLBR
// Deployment template `sllbrd controller` uses while the template ConfigMap
// (deploy/kustomization.yaml generates it from the same file) does not
// exist.
//
//go:embed sllbrd/deployment.yaml
var SLLBRDeploymentTemplate []byte

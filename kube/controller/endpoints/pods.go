package endpoints

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/sllbrd/sllbrd/kube/controller/identifiers"
	"github.com/sllbrd/sllbrd/model"
)

// Candidate is a pod that counts as an endpoint, with its addresses and
// conditions; it still needs an identifier.
type Candidate struct {
	Pod   *corev1.Pod
	Addrs Addresses
	// Ready: the Ready condition is true, the pod's network configuration
	// is applied (Unapplied "") and the pod is not being deleted; Serving:
	// the same but for the deletion; Terminating: the pod is being
	// deleted. Hold.Apply sets Ready and Serving of the pods it holds.
	Ready, Serving, Terminating bool
	// Unapplied says why the pod's network configuration is not known to
	// be applied (see Unapplied), "" when it is: such a pod is neither
	// ready nor serving, and not held. Fault is set when that needs
	// someone to act (ListedFaults).
	Unapplied string
	Fault     Fault
}

// Skipped is a selected pod that is not an endpoint, and why.
type Skipped struct {
	Pod     *corev1.Pod
	Fault   Fault
	Message string
}

// Candidates sorts the selected pods of a Service into endpoints and pods
// skipped with a fault. Succeeded and Failed pods, and Pending pods without
// network-status (Multus writes it when the sandbox starts), are left out
// silently. An endpoint is ready only once its network configuration is
// applied (Unapplied).
func Candidates(pods []*corev1.Pod, gw model.Gateway) ([]Candidate, []Skipped) {
	return sortPods(pods, gw, Unapplied)
}

// NextHops returns the pods of pods that have an address on the Gateway's
// networks, as Candidates does, ready by their Ready condition alone: the
// SLLBR pods, whose own readiness probe says when they forward (no target
// agent configures them).
func NextHops(pods []*corev1.Pod, gw model.Gateway) []Candidate {
	cands, _ := sortPods(pods, gw, func(*corev1.Pod) (string, Fault) { return "", "" })
	return cands
}

// sortPods is Candidates with unapplied saying whether, and why not, a
// pod's network configuration is applied.
func sortPods(pods []*corev1.Pod, gw model.Gateway, unapplied func(*corev1.Pod) (string, Fault)) ([]Candidate, []Skipped) {
	var cands []Candidate
	var skipped []Skipped
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		addrs, fault, msg := PodAddresses(p, gw)
		if !addrs.Has() {
			if fault != FaultNoNetworkStatus || p.Status.Phase == corev1.PodRunning {
				skipped = append(skipped, Skipped{Pod: p, Fault: fault, Message: msg})
			}
			continue
		}
		why, fault := unapplied(p)
		ready := podReady(p) && why == ""
		deleting := p.DeletionTimestamp != nil
		cands = append(cands, Candidate{
			Pod: p, Addrs: addrs,
			Ready: ready && !deleting, Serving: ready, Terminating: deleting,
			Unapplied: why, Fault: fault,
		})
	}
	return cands, skipped
}

func podReady(p *corev1.Pod) bool {
	c := condition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Identify returns the pods of cands as identifiers.Pod values, with
// their addresses.
func Identify(cands []Candidate) []identifiers.Pod {
	out := make([]identifiers.Pod, 0, len(cands))
	for _, c := range cands {
		var addrs []string
		for _, a := range []netip.Addr{c.Addrs.V4, c.Addrs.V6} {
			if a.IsValid() {
				addrs = append(addrs, a.String())
			}
		}
		out = append(out, identifiers.Pod{UID: string(c.Pod.UID), Name: c.Pod.Name, Created: c.Pod.CreationTimestamp.Time,
			Terminating: c.Terminating, Addresses: addrs})
	}
	return out
}

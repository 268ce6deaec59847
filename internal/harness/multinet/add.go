package multinet

import (
	"context"
	"fmt"
)

// add delegates the default network, then each network of the pod's
// annotation, records them in the cache, writes network-status and returns
// the default network's result. Everything it reads (the pod, its
// annotation, the NetworkAttachmentDefinitions) is read and validated
// before anything is added; any failure after that deletes what was added.
func (inv *invocation) add(ctx context.Context) ([]byte, error) {
	if err := inv.env.needPod(); err != nil {
		return nil, err
	}
	api, uid, delegates, err := inv.plan(ctx)
	if err != nil {
		return nil, err
	}
	entry := cacheEntry{ContainerID: inv.env.ContainerID, IfName: inv.env.IfName, Pod: inv.env.pod()}
	statuses := make([]NetworkStatus, 0, len(delegates))
	for _, d := range delegates {
		entry.Delegates = append(entry.Delegates, d)
		if err := inv.cache.save(entry); err != nil {
			return nil, inv.rollback(ctx, entry, err)
		}
		res, err := d.add(ctx, inv.env)
		if err != nil {
			return nil, inv.rollback(ctx, entry, err)
		}
		entry.Delegates[len(entry.Delegates)-1].Result = res
		parsed, err := ParseResult(res, d.Conf.CNIVersion)
		if err != nil { // d.add checked it
			return nil, inv.rollback(ctx, entry, err)
		}
		st := statusOf(d.Name, d.IfName, d.Default, parsed)
		statuses = append(statuses, st)
		inv.log.printf("added network %s on %s: interface %s mac %s ips %v", d.Name, d.IfName, st.Interface, st.Mac, st.IPs)
	}
	if err := inv.cache.save(entry); err != nil {
		return nil, inv.rollback(ctx, entry, err)
	}
	status, err := RenderNetworkStatus(statuses)
	if err != nil {
		return nil, inv.rollback(ctx, entry, err)
	}
	if err := api.SetNetworkStatus(ctx, inv.env.PodNamespace, inv.env.PodName, uid, status); err != nil {
		return nil, inv.rollback(ctx, entry, withCode(CodeKubernetes, err))
	}
	inv.log.printf("wrote %s for %d networks", NetworkStatusAnnotation, len(statuses))
	def := entry.Delegates[0]
	out, err := ConvertResult(def.Result, def.Conf.CNIVersion)
	if err != nil {
		return nil, inv.rollback(ctx, entry, err)
	}
	return out, nil
}

// plan reads the pod (refusing another UID than CNI_ARGS' K8S_POD_UID), its
// networks annotation and their NetworkAttachmentDefinitions, and returns
// the API, the pod's UID and the delegates: the default network on the
// runtime's interface, then the annotation's networks on their interfaces
// (net<N> for the N-th when not given), all interfaces distinct.
func (inv *invocation) plan(ctx context.Context) (API, string, []delegate, error) {
	e := inv.env
	api, err := inv.dial(inv.conf.Kubeconfig)
	if err != nil {
		return nil, "", nil, withCode(CodeKubernetes, err)
	}
	pod, err := api.Pod(ctx, e.PodNamespace, e.PodName)
	if err != nil {
		return nil, "", nil, withCode(CodeKubernetes, err)
	}
	if e.PodUID != "" && pod.UID != e.PodUID {
		return nil, "", nil, codef(CodeKubernetes, "pod %s has UID %s, not the runtime's K8S_POD_UID %s: refusing to attach networks to another pod",
			e.pod(), pod.UID, e.PodUID)
	}
	sels, err := ParseNetworks(pod.Annotations[NetworksAnnotation], e.PodNamespace)
	if err != nil {
		return nil, "", nil, codef(CodeInvalidAttachment, "pod %s: %w", e.pod(), err)
	}
	delegates := []delegate{{Name: inv.defNet.Name, IfName: e.IfName, Default: true, Conf: inv.defNet}}
	owner := map[string]string{e.IfName: inv.defNet.Name}
	for i, s := range sels {
		ifname := s.Interface
		if ifname == "" {
			ifname = fmt.Sprintf("net%d", i+1)
		}
		if other, taken := owner[ifname]; taken {
			return nil, "", nil, codef(CodeInvalidAttachment, "pod %s: networks %s and %s both want interface %s", e.pod(), other, s, ifname)
		}
		owner[ifname] = s.String()
		config, err := api.NetworkConfig(ctx, s.Namespace, s.Name)
		if err != nil {
			return nil, "", nil, codef(CodeKubernetes, "pod %s: network %s: %w", e.pod(), s, err)
		}
		nc, err := ParseNetConf([]byte(config), s.Name)
		if err != nil {
			return nil, "", nil, codef(CodeInvalidAttachment, "pod %s: network %s: %w", e.pod(), s, err)
		}
		delegates = append(delegates, delegate{Name: s.String(), IfName: ifname, Conf: nc})
	}
	inv.log.printf("pod UID %s asks for %d secondary networks", pod.UID, len(sels))
	return api, pod.UID, delegates, nil
}

// rollback deletes what an ADD delegated (entry) after cause, and returns
// cause, with the rollback's own failure if any (the cache entry then stays
// for the runtime's DEL). It runs even when ctx was cancelled.
func (inv *invocation) rollback(ctx context.Context, entry cacheEntry, cause error) error {
	inv.log.printf("ADD failed, deleting the %d networks it delegated: %v", len(entry.Delegates), cause)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err := inv.delAll(ctx, entry); err != nil {
		return fmt.Errorf("%w; deleting what it added failed too (DEL will retry from the cache): %v", cause, err)
	}
	return cause
}

package translate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/model"
)

// secretIndex holds the Secrets of the Gateway's namespace by name.
type secretIndex map[string]*corev1.Secret

func newSecretIndex(gw model.Gateway, secrets []*corev1.Secret) secretIndex {
	out := secretIndex{}
	for _, s := range inScope(gw, secrets) {
		out[s.Name] = s
	}
	return out
}

// value returns the bytes under key in the Secret named name: data, or
// stringData as the API server would have merged it (for manifest files).
func (idx secretIndex) value(name, key string) ([]byte, error) {
	s, ok := idx[name]
	if !ok {
		return nil, fmt.Errorf("Secret %q not found (or not readable)", name)
	}
	if v, ok := s.StringData[key]; ok {
		return []byte(v), nil
	}
	if v, ok := s.Data[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("Secret %q has no key %q", name, key)
}

// translateBGPProtection reads the session's TCP MD5 password and GTSM
// settings into router.BGP. Messages never quote the password.
func translateBGPProtection(r *v1alpha1.GatewayRouter, router model.Router, secrets secretIndex, ps *problems) {
	b := r.Spec.BGP
	if ref := b.PasswordSecretRef; ref != nil {
		const field = "spec.bgp.passwordSecretRef"
		key := ref.Key
		if key == "" {
			key = v1alpha1.DefaultPasswordKey
		}
		v, err := secrets.value(ref.Name, key)
		switch {
		case err != nil:
			ps.add(KindGatewayRouter, r, field, "%v", err)
		case len(v) == 0 || len(v) > model.MaxPasswordLength:
			ps.add(KindGatewayRouter, r, field, "the password in Secret %q key %q has %d bytes, want 1..%d (TCP MD5, RFC 2385)",
				ref.Name, key, len(v), model.MaxPasswordLength)
		case isIPv6LinkLocal(router.Address):
			// GoBGP v3.37.0 parses the neighbour address with its zone
			// when keying the socket, fails, and keys the unspecified
			// address instead: the session would never be signed.
			ps.add(KindGatewayRouter, r, field, "a TCP MD5 password needs an address that is not IPv6 link-local")
		default:
			router.BGP.Password = model.NewPassword(string(v))
		}
	}
	if t := b.TTLSecurity; t != nil {
		const field = "spec.bgp.ttlSecurity"
		hops := t.Hops
		if hops == 0 {
			hops = v1alpha1.DefaultTTLSecurityHops
		}
		switch {
		case hops < 1 || hops > v1alpha1.MaxTTLSecurityHops:
			ps.add(KindGatewayRouter, r, field+".hops", "%d is not in 1..%d", t.Hops, v1alpha1.MaxTTLSecurityHops)
		case b.LocalASN == b.RemoteASN:
			ps.add(KindGatewayRouter, r, field, "TTL security (GTSM, RFC 5082) is for eBGP sessions only (localASN different from remoteASN)")
		default:
			router.BGP.TTLSecurityHops = uint8(hops)
		}
	}
}

// translateBGPAttributes reads the communities and local preference that
// go with the VIPs announced to the router.
func translateBGPAttributes(r *v1alpha1.GatewayRouter, out *model.BGP, ps *problems) {
	b := r.Spec.BGP
	out.Communities = parseList(r, "spec.bgp.communities", b.Communities, model.ParseCommunity, ps)
	out.LargeCommunities = parseList(r, "spec.bgp.largeCommunities", b.LargeCommunities, model.ParseLargeCommunity, ps)
	if lp := b.LocalPreference; lp != nil {
		const field = "spec.bgp.localPreference"
		switch {
		case b.LocalASN != b.RemoteASN:
			ps.add(KindGatewayRouter, r, field, "local preference is sent over iBGP sessions only (localASN equal to remoteASN)")
		case *lp == 0:
			// GoBGP's policy action treats 0 as "no action".
			ps.add(KindGatewayRouter, r, field, "0 cannot be sent: use 1 for the least preferred")
		default:
			v := *lp
			out.LocalPreference = &v
		}
	}
}

// parseList parses every item, reporting bad and duplicate ones and more
// than MaxCommunities items.
func parseList[S ~string, T comparable](r *v1alpha1.GatewayRouter, field string, in []S, parse func(string) (T, error), ps *problems) []T {
	if len(in) > v1alpha1.MaxCommunities {
		ps.add(KindGatewayRouter, r, field, "%d items, at most %d are allowed", len(in), v1alpha1.MaxCommunities)
		return nil
	}
	var out []T
	seen := make(map[T]bool, len(in))
	for i, s := range in {
		v, err := parse(string(s))
		switch {
		case err != nil:
			ps.add(KindGatewayRouter, r, fmt.Sprintf("%s[%d]", field, i), "%v", err)
		case seen[v]:
			ps.add(KindGatewayRouter, r, fmt.Sprintf("%s[%d]", field, i), "%v is listed twice", v)
		default:
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

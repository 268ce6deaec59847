package bgp

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/model"
)

// attrsRouters are the seed's routers with communities, a large community
// and (as if iBGP) a local preference towards the IPv4 gateway.
func attrsRouters(communities ...model.Community) []model.Router {
	r := seedRouters()
	lp := uint32(200)
	r[0].BGP.Communities = communities
	r[0].BGP.LargeCommunities = []model.LargeCommunity{{Global: 8103, Local1: 1, Local2: 2}}
	r[0].BGP.LocalPreference = &lp
	return r
}

// TestExportAttributesFollowTheRouter: attributes are installed as a
// per-peer export policy before the peer is added; a change replaces only
// that policy and re-advertises to that peer without a session reset;
// removing them (or the router) removes the policy.
func TestExportAttributesFollowTheRouter(t *testing.T) {
	s, f := newTestSpeaker(t)
	ctx := context.Background()
	const (
		v4Policy = "sllbrd-attrs-" + gwV4
		v4Set    = "sllbrd-peer-" + gwV4
	)
	if err := s.Apply(ctx, attrsRouters(8103<<16|100)); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f,
		"assign EXPORT [sllbrd-export]",
		"delete policy "+v4Policy, "delete set "+v4Set,
		"add set "+v4Set+" ["+gwV4+"/32]",
		"add policy "+v4Policy+" route=NONE communities=[8103:100] large=[8103:1:2] localpref=200",
		"assign EXPORT ["+v4Policy+" sllbrd-export]",
		"add "+gwV4+" down=false", "add "+gwV6+" down=false")

	if err := s.Apply(ctx, attrsRouters(8103<<16|100)); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f) // unchanged: nothing

	if err := s.Apply(ctx, attrsRouters(8103<<16|200, 65535<<16|65281)); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f,
		"assign EXPORT [sllbrd-export]",
		"delete policy "+v4Policy, "delete set "+v4Set,
		"add set "+v4Set+" ["+gwV4+"/32]",
		"add policy "+v4Policy+" route=NONE communities=[8103:200 65535:65281] large=[8103:1:2] localpref=200",
		"assign EXPORT ["+v4Policy+" sllbrd-export]",
		"soft reset OUT "+gwV4) // no delete/add of the peer

	if err := s.Apply(ctx, seedRouters()); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f,
		"assign EXPORT [sllbrd-export]",
		"delete policy "+v4Policy, "delete set "+v4Set,
		"assign EXPORT [sllbrd-export]",
		"soft reset OUT "+gwV4)

	if err := s.Apply(ctx, attrsRouters()); err != nil {
		t.Fatal(err)
	}
	f.takeCalls()
	if err := s.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "delete "+gwV4, "delete "+gwV6,
		"assign EXPORT [sllbrd-export]",
		"delete policy "+v4Policy, "delete set "+v4Set,
		"assign EXPORT [sllbrd-export]")
}

// TestExportAttributesRetried: a failed policy or re-advertisement is
// reported and done again by the next Apply with the same routers.
func TestExportAttributesRetried(t *testing.T) {
	s, f := newTestSpeaker(t)
	ctx := context.Background()
	if err := s.Apply(ctx, seedRouters()); err != nil {
		t.Fatal(err)
	}
	f.takeCalls()

	boom := errors.New("boom")
	f.failNext("ResetPeer", boom)
	if err := s.Apply(ctx, attrsRouters(1)); !errors.Is(err, boom) {
		t.Fatalf("Apply with a failing soft reset = %v, want boom", err)
	}
	f.failNext("ResetPeer", nil)
	f.takeCalls()
	if err := s.Apply(ctx, attrsRouters(1)); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "soft reset OUT "+gwV4)

	f.failNext("AddPolicy", boom)
	if err := s.Apply(ctx, attrsRouters(2)); !errors.Is(err, boom) {
		t.Fatalf("Apply with a failing policy = %v, want boom", err)
	}
	calls := f.takeCalls()
	if strings.Contains(strings.Join(calls, ","), "soft reset") {
		t.Errorf("re-advertised although the policy failed: %q", calls)
	}
	f.failNext("AddPolicy", nil)
	if err := s.Apply(ctx, attrsRouters(2)); err != nil {
		t.Fatal(err)
	}
	calls = f.takeCalls()
	if got := strings.Join(calls, ","); !strings.Contains(got, "communities=[0:2]") || !strings.HasSuffix(got, "soft reset OUT "+gwV4) {
		t.Errorf("retry calls %q: want the policy added, then the soft reset", calls)
	}
}

// TestPeerProtection: the password and GTSM reach GoBGP's peer, a change
// of either re-creates the session, and a password is refused for a
// link-local neighbour (GoBGP would key the wrong address).
func TestPeerProtection(t *testing.T) {
	r := seedRouters()[:2]
	r[0].BGP.Password = model.NewPassword("s3cret")
	r[0].BGP.TTLSecurityHops = 1
	r[1].BGP.TTLSecurityHops = 2
	specs, err := peerSpecs(r, DefaultGlobalASN)
	if err != nil {
		t.Fatal(err)
	}
	p4 := apiPeer(specs[netip.MustParseAddr(gwV4)], defaultConfig(), false)
	p6 := apiPeer(specs[netip.MustParseAddr(gwV6)], defaultConfig(), false)
	if p4.Conf.AuthPassword != "s3cret" || !p4.TtlSecurity.GetEnabled() || p4.TtlSecurity.GetTtlMin() != 255 {
		t.Errorf("IPv4 peer: password %q, TTL security %+v; want s3cret, min TTL 255", p4.Conf.AuthPassword, p4.TtlSecurity)
	}
	if p6.Conf.AuthPassword != "" || p6.TtlSecurity.GetTtlMin() != 254 {
		t.Errorf("IPv6 peer: password %q, TTL security %+v; want none, min TTL 254", p6.Conf.AuthPassword, p6.TtlSecurity)
	}
	if p := apiPeer(peerSpec{addr: netip.MustParseAddr(gwV4), remoteASN: 1}, defaultConfig(), false); p.TtlSecurity != nil {
		t.Errorf("a peer without GTSM has TTL security %+v", p.TtlSecurity)
	}

	changed := seedRouters()[:2]
	changed[0].BGP.Password = model.NewPassword("other")
	changed[1].BGP.TTLSecurityHops = 1
	after, _ := peerSpecs(changed, DefaultGlobalASN)
	plan := diffPeers(specs, after)
	if len(plan.remove) != 2 || len(plan.add) != 2 {
		t.Errorf("password and GTSM changes: plan %+v, want both peers re-created", plan)
	}

	ll := []model.Router{{Name: "ll", Address: netip.MustParseAddr("fe80::1"), Interface: "eth1",
		BGP: &model.BGP{RemoteASN: 1, Password: model.NewPassword("x")}}}
	if _, err := peerSpecs(ll, DefaultGlobalASN); err == nil || !strings.Contains(err.Error(), "link-local") {
		t.Errorf("password with a link-local neighbour: %v, want refused", err)
	}
}

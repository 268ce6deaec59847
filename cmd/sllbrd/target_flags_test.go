package main

import (
	"strings"
	"testing"
	"time"
)

func TestTargetFlagsDefaults(t *testing.T) {
	t.Setenv("POD_NAME", "app-7d9f-x2")
	c, err := parseTargetFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.pod != "app-7d9f-x2" || c.node != "" || c.metricsAddress != "127.0.0.1:9180" || c.resync != 30*time.Second || !c.requireConfig || c.kubeconfig != "" ||
		c.pprofAddress != "" {
		t.Errorf("defaults %+v", c)
	}
	if c, err := parseTargetFlags([]string{"--pod=p", "--require-config=false", "--resync=0"}); err != nil || c.pod != "p" || c.requireConfig || c.resync != 0 {
		t.Errorf("flags %+v %v", c, err)
	}
}

// TestTargetNodeFlags: --node selects the node daemon, whatever $POD_NAME
// says (a DaemonSet may set it for its own use), with its own defaults.
func TestTargetNodeFlags(t *testing.T) {
	t.Setenv("POD_NAME", "sllbrd-target-node-x2")
	c, err := parseTargetFlags([]string{"--node=worker-1.example"})
	if err != nil {
		t.Fatal(err)
	}
	if c.node != "worker-1.example" || c.pod != "" || c.metricsAddress != "127.0.0.1:9181" || c.cleanup ||
		c.runtimeEndpoint != "unix:///run/containerd/containerd.sock" || c.resync != 30*time.Second || c.pprofAddress != "" {
		t.Errorf("node defaults %+v", c)
	}
	c, err = parseTargetFlags([]string{"--node=n1", "--cleanup", "--runtime-endpoint=unix:///run/crio/crio.sock", "--metrics-address=:9181", "--resync=1m"})
	if err != nil || !c.cleanup || c.runtimeEndpoint != "unix:///run/crio/crio.sock" || c.metricsAddress != ":9181" || c.resync != time.Minute {
		t.Errorf("node flags %+v %v", c, err)
	}
}

func TestTargetFlagsRejectBadValues(t *testing.T) {
	t.Setenv("POD_NAME", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "neither --node nor --pod given, and $POD_NAME is empty"},
		{[]string{"--pod="}, "neither --node nor --pod given"},
		{[]string{"--pod=p", "--metrics-address="}, "--metrics-address is required"},
		{[]string{"--node=n1", "--metrics-address="}, "--metrics-address is required"},
		{[]string{"--pod=p", "--resync=-1s"}, "--resync -1s"},
		{[]string{"--node=n1", "--resync=-1s"}, "--resync -1s"},
		{[]string{"--pod=p", "--log-level=loud"}, "--log-level"},
		{[]string{"--pod=p", "extra"}, "unexpected arguments"},
		{[]string{"--gateway=x"}, "flag provided but not defined: -gateway"},
		{[]string{"--node=n1", "--pod=p"}, "--node and --pod exclude each other"},
		{[]string{"--node="}, `--node ""`},
		{[]string{"--node=$(NODE_NAME)"}, `--node "$(NODE_NAME)"`},
		{[]string{"--node=n1", "--namespace=x"}, "--namespace is the sidecar's: not with --node"},
		{[]string{"--node=n1", "--require-config=false"}, "--require-config is the sidecar's"},
		{[]string{"--node=n1", "--runtime-endpoint="}, "--runtime-endpoint is required"},
		{[]string{"--pod=p", "--cleanup"}, "--cleanup is the node daemon's: only with --node"},
		{[]string{"--cleanup"}, "--cleanup is the node daemon's"},
		{[]string{"--pod=p", "--runtime-endpoint=unix:///x.sock"}, "--runtime-endpoint is the node daemon's"},
	} {
		_, err := parseTargetFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// --pprof-address: loopback only, for the sidecar and the node daemon.
	for _, args := range [][]string{{"--pod=p"}, {"--node=n1"}} {
		for _, addr := range []string{"127.0.0.1:6061", "[::1]:6061"} {
			if c, err := parseTargetFlags(append(args, "--pprof-address="+addr)); err != nil || c.pprofAddress != addr {
				t.Errorf("%v --pprof-address=%s: %+v, %v", args, addr, c, err)
			}
		}
		for addr, want := range map[string]string{
			"10.0.0.1:6061": `--pprof-address: "10.0.0.1:6061": the host must be a loopback address`,
			":6061":         `--pprof-address: ":6061": the host must be a loopback address`,
		} {
			if _, err := parseTargetFlags(append(args, "--pprof-address="+addr)); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v --pprof-address=%s: error %v, want %q", args, addr, err, want)
			}
		}
	}
	// $POD_NAME set: --node still excludes an explicit --pod only.
	t.Setenv("POD_NAME", "app-1")
	if _, err := parseTargetFlags([]string{"--node=n1", "--pod=app-1"}); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("--node with --pod: %v", err)
	}
}

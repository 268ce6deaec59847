package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/kube/controller"
)

func TestControllerFlagsDefaults(t *testing.T) {
	t.Setenv("POD_NAME", "sllbrd-controller-7d9f-x2")
	c, err := parseControllerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := c.election
	if c.metricsAddress != "127.0.0.1:9100" || c.templateConfigMap != "sllbrd-templates" || c.workers != 2 ||
		!e.Enabled || e.LeaseName != "sllbrd-controller" || e.LeaseDuration != 15*time.Second ||
		e.RenewDeadline != 10*time.Second || e.RetryPeriod != 2*time.Second {
		t.Errorf("defaults %+v", c)
	}
	if c.readinessHoldMax != 30*time.Second {
		t.Errorf("--readiness-hold-max %v, want 30s", c.readinessHoldMax)
	}
	if c.election.LeaseName != controller.DefaultLeaseName {
		t.Errorf("lease %s", c.election.LeaseName)
	}
	if c.pod != "sllbrd-controller-7d9f-x2" || c.container != "controller" || c.sllbrImage != "" {
		t.Errorf("pod %q container %q sllbr-image %q: want $POD_NAME, controller, none", c.pod, c.container, c.sllbrImage)
	}
	if c.pprofAddress != "" {
		t.Errorf("--pprof-address %q by default, want off", c.pprofAddress)
	}
	for _, addr := range []string{"127.0.0.1:6060", "[::1]:6060"} {
		if c, err := parseControllerFlags([]string{"--pprof-address=" + addr}); err != nil || c.pprofAddress != addr {
			t.Errorf("--pprof-address=%s: %+v, %v", addr, c, err)
		}
	}
}

// TestControllerFlagsMatchTheDeployment: the controller's container in
// deploy/controller/deployment.yaml is the default --container, and its
// pod name reaches --pod through $POD_NAME.
func TestControllerFlagsMatchTheDeployment(t *testing.T) {
	objs, err := kubetest.ReadObjects(filepath.Join(deployDir, "controller", "deployment.yaml"))
	if err != nil || len(objs) != 1 {
		t.Fatalf("deployment.yaml: %d objects, %v", len(objs), err)
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Name != DefaultControllerContainer {
		t.Errorf("container %q, want --container's default %q", c.Name, DefaultControllerContainer)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}) {
		t.Errorf("env %+v: no POD_NAME from metadata.name", c.Env)
	}
}

func TestControllerFlagsRejectBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers=0"}, "--workers 0"},
		{[]string{"--metrics-address="}, "--metrics-address is required"},
		{[]string{"--leader-election-renew-deadline=20s"}, "lease-duration (15s) > --leader-election-renew-deadline (20s)"},
		{[]string{"--log-level=loud"}, "--log-level"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--gateway=x"}, "flag provided but not defined: -gateway"},
		{[]string{"--pod=Not_A_Pod"}, `--pod "Not_A_Pod"`},
		{[]string{"--container="}, `--container ""`},
		{[]string{"--readiness-hold-max=-1s"}, "--readiness-hold-max -1s: want 0 (no hold) to 5m0s"},
		{[]string{"--readiness-hold-max=6m"}, "--readiness-hold-max 6m0s"},
		{[]string{"--readiness-hold-max=30"}, "invalid value \"30\" for flag -readiness-hold-max"},
		{[]string{"--sllbr-image=example.org/sllbrd:v1 --evil"}, "--sllbr-image \"example.org/sllbrd:v1 --evil\" contains white space"},
		{[]string{"--pprof-address=10.0.0.1:6060"}, `--pprof-address: "10.0.0.1:6060": the host must be a loopback address`},
		{[]string{"--pprof-address=:6060"}, `--pprof-address: ":6060": the host must be a loopback address`},
		{[]string{"--pprof-address=localhost:6060"}, `--pprof-address: "localhost:6060": the host must be a loopback address`},
		{[]string{"--pprof-address=127.0.0.1"}, `--pprof-address: "127.0.0.1": want host:port`},
	} {
		_, err := parseControllerFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	if c, err := parseControllerFlags([]string{"--readiness-hold-max=0"}); err != nil || c.readinessHoldMax != 0 {
		t.Errorf("--readiness-hold-max=0 (no hold): %v", err)
	}
	if _, err := parseControllerFlags([]string{"--leader-elect=false", "--leader-election-renew-deadline=20s"}); err != nil {
		t.Errorf("timings are not checked without leader election: %v", err)
	}
}

// TestSubcommands pins the dispatch: `sllbrd controller` is the controller,
// anything else is the daemon's command line as before.
func TestSubcommands(t *testing.T) {
	if _, ok := subcommands["controller"]; !ok {
		t.Errorf("subcommands %v", subcommands)
	}
	if _, err := parseFlags([]string{"controller"}); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("the daemon's flags accept a positional argument: %v", err)
	}
}

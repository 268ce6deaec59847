package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/kube/controller"
)

func TestControllerFlagsDefaults(t *testing.T) {
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
	if c.election.LeaseName != controller.DefaultLeaseName {
		t.Errorf("lease %s", c.election.LeaseName)
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
	} {
		_, err := parseControllerFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
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

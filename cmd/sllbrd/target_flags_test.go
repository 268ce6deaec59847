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
	if c.pod != "app-7d9f-x2" || c.metricsAddress != "127.0.0.1:9180" || c.resync != 30*time.Second || !c.requireConfig || c.kubeconfig != "" {
		t.Errorf("defaults %+v", c)
	}
	if c, err := parseTargetFlags([]string{"--pod=p", "--require-config=false", "--resync=0"}); err != nil || c.pod != "p" || c.requireConfig || c.resync != 0 {
		t.Errorf("flags %+v %v", c, err)
	}
}

func TestTargetFlagsRejectBadValues(t *testing.T) {
	t.Setenv("POD_NAME", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "$POD_NAME is empty"},
		{[]string{"--pod=p", "--metrics-address="}, "--metrics-address is required"},
		{[]string{"--pod=p", "--resync=-1s"}, "--resync -1s"},
		{[]string{"--pod=p", "--log-level=loud"}, "--log-level"},
		{[]string{"--pod=p", "extra"}, "unexpected arguments"},
		{[]string{"--gateway=x"}, "flag provided but not defined: -gateway"},
	} {
		_, err := parseTargetFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

package main

import (
	"errors"
	"flag"
	"io"
	"net/netip"
	"slices"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestNameDefaultsToThePodName: without -name the name is $POD_NAME; -name
// wins; neither is an error.
func TestNameDefaultsToThePodName(t *testing.T) {
	args := []string{"-addr", "192.0.2.1, 2001:db8::1", "-udp", "5000-5001", "-tcp", "80", "-echo", "7"}
	cfg, err := parseFlags(args, env(map[string]string{"POD_NAME": "app-7d9f-x2"}), io.Discard, new(time.Duration))
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}
	if cfg.Name != "app-7d9f-x2" || !slices.Equal(cfg.Addrs, want) || !slices.Equal(cfg.UDPPorts, []uint16{5000, 5001}) ||
		!slices.Equal(cfg.TCPPorts, []uint16{80}) || !slices.Equal(cfg.EchoPorts, []uint16{7}) {
		t.Errorf("config %+v", cfg)
	}
	if cfg, err := parseFlags(append([]string{"-name", "t1"}, args...), env(map[string]string{"POD_NAME": "p"}), io.Discard, new(time.Duration)); err != nil || cfg.Name != "t1" {
		t.Errorf("-name t1 with $POD_NAME set: name %q (%v), want t1", cfg.Name, err)
	}
	if _, err := parseFlags(args, env(nil), io.Discard, new(time.Duration)); err == nil {
		t.Error("no -name and no $POD_NAME accepted")
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-name", "t"},
		{"-name", "t", "-addr", ""},
		{"-name", "t", "-addr", "192.0.2.1,"},
		{"-name", "t", "-addr", "vip"},
		{"-name", "t", "-addr", "192.0.2.1", "-udp", "0"},
		{"-name", "t", "-addr", "192.0.2.1", "-tcp", "9-1"},
		{"-name", "t", "-addr", "192.0.2.1", "-echo", "x"},
		{"-name", "t", "-addr", "192.0.2.1", "extra"},
	} {
		if _, err := parseFlags(args, env(nil), io.Discard, new(time.Duration)); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	if _, err := parseFlags([]string{"-h"}, env(nil), io.Discard, new(time.Duration)); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp (exit status 0)", err)
	}
}

func TestDrainFlag(t *testing.T) {
	args := []string{"-name", "t1", "-addr", "20.0.0.1"}
	var drain time.Duration
	if _, err := parseFlags(append(args, "-drain", "2s"), env(nil), io.Discard, &drain); err != nil || drain != 2*time.Second {
		t.Errorf("-drain 2s: %v, %v", drain, err)
	}
	for _, bad := range []string{"-1s", "2m"} {
		if _, err := parseFlags(append(args, "-drain", bad), env(nil), io.Discard, &drain); err == nil {
			t.Errorf("-drain %s accepted", bad)
		}
	}
}

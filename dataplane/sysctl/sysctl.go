package sysctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Setting is one sysctl and the value sllbrd needs.
type Setting struct {
	Name string // dotted, e.g. "net.ipv4.ip_forward"
	Want string
}

// Required are the settings of the SLLBR (Meridio 2.x design).
var Required = []Setting{
	{"net.ipv4.ip_forward", "1"},
	{"net.ipv6.conf.all.forwarding", "1"},
	{"net.ipv4.fib_multipath_hash_policy", "1"},
	{"net.ipv6.fib_multipath_hash_policy", "1"},
	{"net.ipv4.conf.all.rp_filter", "2"},
	{"net.ipv4.conf.default.rp_filter", "2"},
	{"net.ipv4.fwmark_reflect", "1"},
	{"net.ipv6.fwmark_reflect", "1"},
	{"net.ipv4.ip_local_port_range", "49152 65535"},
}

// Finding is a setting whose value differed from the wanted one.
type Finding struct {
	Name, Want, Have string
	Fixed            bool // written and read back equal to Want
}

func (f Finding) String() string {
	state := "wrong"
	if f.Fixed {
		state = "fixed"
	}
	return fmt.Sprintf("%s: want %q, have %q (%s)", f.Name, f.Want, f.Have, state)
}

type options struct {
	root     string
	settings []Setting
}

// Option configures Ensure.
type Option func(*options)

// WithRoot reads and writes under dir instead of /proc/sys.
func WithRoot(dir string) Option { return func(o *options) { o.root = dir } }

// WithSettings checks s instead of Required.
func WithSettings(s []Setting) Option { return func(o *options) { o.settings = s } }

// Ensure checks the settings and, when set is true, writes the wrong ones.
// It returns a Finding per setting that differed (Have is the value before
// any write) and an error joining every setting it could not read or fix.
func Ensure(set bool, opts ...Option) ([]Finding, error) {
	o := options{root: "/proc/sys", settings: Required}
	for _, opt := range opts {
		opt(&o)
	}
	var findings []Finding
	var errs []error
	for _, s := range o.settings {
		path := filepath.Join(o.root, strings.ReplaceAll(s.Name, ".", "/"))
		have, err := read(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("sysctl %s: %w", s.Name, err))
			continue
		}
		want := normalize(s.Want)
		if have == want {
			continue
		}
		f := Finding{Name: s.Name, Want: want, Have: have}
		if set {
			if err := write(path, want); err != nil {
				errs = append(errs, fmt.Errorf("sysctl %s: %w", s.Name, err))
			} else {
				f.Fixed = true
			}
		}
		findings = append(findings, f)
	}
	return findings, errors.Join(errs...)
}

func read(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	return normalize(string(b)), nil
}

// write stores v and checks that it reads back.
func write(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	_, err = f.WriteString(v + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	got, err := read(path)
	if err != nil {
		return err
	}
	if got != v {
		return fmt.Errorf("wrote %q, reads back %q", v, got)
	}
	return nil
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

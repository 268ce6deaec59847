package multinet

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// cniName is the CNI spec's syntax of a network name, also used for plugin
// types (which name a file in CNI_PATH, so never hold a '/') and container
// IDs (which name multinet's cache files).
var cniName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// checkCNIName returns an error when s is not a CNI name; what says what s is.
func checkCNIName(what, s string) error {
	if !cniName.MatchString(s) {
		return fmt.Errorf("%s %q: want a letter or digit followed by letters, digits, '_', '.' or '-'", what, s)
	}
	return nil
}

// checkIfName returns an error unless s is a Linux interface name the
// kernel accepts: 1-15 bytes, not "." or "..", no '/', ':', whitespace or
// control characters.
func checkIfName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("interface name is empty")
	case len(s) > 15:
		return fmt.Errorf("interface name %q is longer than 15 bytes", s)
	case s == "." || s == "..":
		return fmt.Errorf("interface name %q is not allowed", s)
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' || r == ':' }):
		return fmt.Errorf("interface name %q holds '/', ':', whitespace or a control character", s)
	}
	return nil
}

// checkNamespace returns an error unless s is a DNS-1123 label (a
// namespace's name).
func checkNamespace(s string) error {
	if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
		return fmt.Errorf("namespace %q: %s", s, strings.Join(msgs, "; "))
	}
	return nil
}

// checkObjectName returns an error unless s is a DNS-1123 subdomain (the
// name of a pod or a NetworkAttachmentDefinition).
func checkObjectName(what, s string) error {
	if msgs := validation.IsDNS1123Subdomain(s); len(msgs) > 0 {
		return fmt.Errorf("%s name %q: %s", what, s, strings.Join(msgs, "; "))
	}
	return nil
}

// checkVersion returns an error unless v is one of the versions.
func checkVersion(what, v string, versions []string) error {
	if !slices.Contains(versions, v) {
		return fmt.Errorf("%s cniVersion %q is not supported (want one of %s)", what, v, strings.Join(versions, ", "))
	}
	return nil
}

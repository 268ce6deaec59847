package translate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/kube/translate"
)

const copyRangeRoutes = "testdata/copy-range/routes.yaml"

// TestByteMatchBeyondCopyRangeIsAProblem checks that a route whose byte
// match ends beyond what a 256-byte copy range shows of the transport
// header (236 bytes of IPv4, 216 of IPv6) is left out with a problem on
// that match, while a match ending on the last visible byte is kept.
func TestByteMatchBeyondCopyRangeIsAProblem(t *testing.T) {
	r := translateFile(t, copyRangeRoutes, translate.WithCopyRange(256))
	if got, want := routeNames(r.State), []string{"default/v4-last-byte", "default/v6-last-byte"}; !slices.Equal(got, want) {
		t.Errorf("routes = %v, want %v", got, want)
	}
	for _, want := range []struct{ name, field, says string }{
		{"v4-one-byte-beyond", "spec.byteMatches[1]", "bytes 233..236 of the transport header, but with a copy range of 256 bytes sllbrd sees at most 236 bytes of it in an IPv4 packet"},
		{"v6-one-byte-beyond", "spec.byteMatches[0]", "at most 216 bytes of it in an IPv6 packet (40-byte header at least), so it could never match; raise --copy-range to at least 257"},
		{"dual-stack-beyond-v6", "spec.byteMatches[0]", "in an IPv6 packet"},
	} {
		assertProblem(t, r.Problems, translate.Problem{Kind: "L34Route", Namespace: "default", Name: want.name, Field: want.field})
		if !slices.ContainsFunc(r.Problems, func(p translate.Problem) bool {
			return p.Name == want.name && strings.Contains(p.Message, want.says)
		}) {
			t.Errorf("no problem on %s saying %q in %v", want.name, want.says, r.Problems)
		}
	}
	if len(r.Problems) != 3 {
		t.Errorf("%d problems, want 3 (one per match beyond the range): %v", len(r.Problems), r.Problems)
	}
}

// TestByteMatchesUncheckedWithoutCopyRange: without WithCopyRange (or with
// 0) nothing is known about the copy range and every route is kept.
func TestByteMatchesUncheckedWithoutCopyRange(t *testing.T) {
	for _, opts := range [][]translate.Option{nil, {translate.WithCopyRange(0)}} {
		r := translateFile(t, copyRangeRoutes, opts...)
		if len(r.State.Routes) != 5 || len(r.Problems) != 0 {
			t.Errorf("options %d: %d routes, problems %v; want all 5 routes, no problem", len(opts), len(r.State.Routes), r.Problems)
		}
	}
}

// TestByteMatchWithinALargerCopyRange: the copy range each problem asks
// for (262 for the dual-stack route, the largest) is enough for every route.
func TestByteMatchWithinALargerCopyRange(t *testing.T) {
	r := translateFile(t, copyRangeRoutes, translate.WithCopyRange(262))
	if len(r.State.Routes) != 5 || len(r.Problems) != 0 {
		t.Errorf("copy range 262: %d routes, problems %v; want all 5 routes", len(r.State.Routes), r.Problems)
	}
}

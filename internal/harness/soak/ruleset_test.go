package soak

import (
	"os"
	"strings"
	"testing"
)

func readRuleset(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NormalizeRuleset(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ruleset-a.json and ruleset-b.json are `nft -j list ruleset` (nft 1.0.6)
// of one configuration loaded twice: b after a deleted table (other
// handles), with the tables in another order, other counter values, quota
// use, set elements in another order with other timeouts and expiry.
func TestNormalizeRulesetEqual(t *testing.T) {
	a, b := readRuleset(t, "ruleset-a.json"), readRuleset(t, "ruleset-b.json")
	if d := Diff(a, b); d != "" {
		t.Errorf("one configuration normalized to two texts:\n%s", d)
	}
	for _, gone := range []string{`"handle"`, `"packets"`, `"used"`, `"expires"`, `"timeout":10`, "metainfo"} {
		if strings.Contains(a, gone) {
			t.Errorf("normalized text still has %s:\n%s", gone, a)
		}
	}
	for _, kept := range []string{
		`"bytes":104857600`, // the quota's limit is configuration
		`"rate":10`,         // and so is a limit's rate
		`"timeout":30`,      // and a set's default timeout
		`{"counter":null}`,  // a set's counter statement
		`"quota":{"inv":true,"val":10,"val_unit":"mbytes"}`,
		"table inet t {}",
		`    elem {"elem":{"val":"10.0.0.1"}}`,
	} {
		if !strings.Contains(a, kept) {
			t.Errorf("normalized text lost %s:\n%s", kept, a)
		}
	}
	// Rules follow their chain, in kernel order.
	pre := strings.Index(a, "  chain inet t pre ")
	first := strings.Index(a, `"right":"@s4"`)
	second := strings.Index(a, `"comment":"x"`)
	if pre < 0 || !(pre < first && first < second) {
		t.Errorf("rules of chain pre are not after it in order:\n%s", a)
	}
}

func TestNormalizeRulesetDiffers(t *testing.T) {
	raw, err := os.ReadFile("testdata/ruleset-a.json")
	if err != nil {
		t.Fatal(err)
	}
	base := readRuleset(t, "ruleset-a.json")
	for _, tc := range []struct{ name, old, new string }{
		{"rule changed", `"right": 7`, `"right": 8`},
		{"element changed", `"val": "10.0.0.2"`, `"val": "10.0.0.3"`},
		{"chain policy", `"policy": "accept"`, `"policy": "drop"`},
		{"limit rate", `"rate": 5,`, `"rate": 6,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := strings.Replace(string(raw), tc.old, tc.new, 1)
			if changed == string(raw) {
				t.Fatalf("%s not in the fixture", tc.old)
			}
			got, err := NormalizeRuleset([]byte(changed))
			if err != nil {
				t.Fatal(err)
			}
			if Diff(base, got) == "" {
				t.Errorf("changing %s made no difference", tc.old)
			}
		})
	}
}

func TestNormalizeRulesetErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", "table inet t {}", "invalid character"},
		{"no nftables", `{"other": []}`, `no "nftables" array`},
		{"bad object", `{"nftables": [{"table": 3}]}`, "item 0 (table)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NormalizeRuleset([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNormalizeRulesetPartial(t *testing.T) {
	// `nft -j list chain` has no table object and a rule may come without
	// its chain: still one line each.
	got, err := NormalizeRuleset([]byte(`{"nftables": [{"metainfo": {}},
		{"rule": {"family": "ip", "table": "x", "chain": "c", "handle": 4, "expr": [{"accept": null}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "    rule ip x c {\"expr\":[{\"accept\":null}]}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDiff(t *testing.T) {
	many := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(prefix + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct{ name, a, b, want string }{
		{"equal", "x\ny\n", "x\ny\n", ""},
		{"changed line", "x\ny\nz\n", "x\nY\nz\n", "differ from line 2:\n- y\n+ Y"},
		{"added line", "x\nz\n", "x\ny\nz\n", "differ from line 2:\n+ y"},
		{"removed repeat", "x\nx\nx\n", "x\nx\n", "differ from line 3:\n- "},
		{"reordered", "x\na\nb\n", "x\nb\na\n", "differ from line 2:\n- a\n+ b"},
		{"long", many("-", 30), many("+", 30), "differ from line 1:\n- -aa\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(tc.a, tc.b)
			if tc.want == "" || tc.name != "long" && tc.name != "removed repeat" {
				if got != tc.want {
					t.Errorf("Diff = %q, want %q", got, tc.want)
				}
				return
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("Diff = %q, want it to start with %q", got, tc.want)
			}
		})
	}
	long := Diff(many("-", 30), many("+", 30))
	if n := strings.Count(long, "\n"); n != 21 || !strings.HasSuffix(long, "... and 40 more") {
		t.Errorf("long diff has %d lines, want the header, 20 lines and a count of the rest:\n%s", n, long)
	}
}

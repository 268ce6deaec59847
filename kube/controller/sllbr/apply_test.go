package sllbr

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestApplyIsTheRenderedDeploymentWithoutStatus(t *testing.T) {
	want := Render(template(t), gateway(), Parameters{})
	want.Status.Replicas = 3
	ac, err := Apply(want)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ac)
	body := string(b)
	for _, part := range []string{`"apiVersion":"apps/v1"`, `"kind":"Deployment"`, `"name":"sllbrd-sllb-b"`, `"namespace":"tenant-b"`,
		`"--gateway=sllb-b"`, `"` + AnnotationHash + `"`, `"uid":"gw-uid"`} {
		if !strings.Contains(body, part) {
			t.Errorf("the apply configuration lacks %s: %s", part, body)
		}
	}
	for _, part := range []string{`"status"`, `"creationTimestamp"`, `"resourceVersion"`} {
		if strings.Contains(body, part) {
			t.Errorf("the apply configuration has %s: %s", part, body)
		}
	}
}

func TestDriftedWithoutOwnedFields(t *testing.T) {
	want := Render(template(t), gateway(), Parameters{})
	live := want.DeepCopy()
	// No managedFields: nothing is owned by the manager, everything drifted.
	if drifted, err := Drifted(live, want, "sllbrd-controller"); err != nil || !drifted {
		t.Errorf("Drifted = %v, %v; want true: the manager owns nothing", drifted, err)
	}
	live.Annotations[AnnotationHash] = "other"
	if drifted, err := Drifted(live, want, "sllbrd-controller"); err != nil || !drifted {
		t.Errorf("Drifted = %v, %v; want true: the hash differs", drifted, err)
	}
}

func TestCovers(t *testing.T) {
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, have, want string
		covered          bool
	}{
		{"equal", `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`, true},
		{"more in have", `{"a":1,"b":"x","c":[1]}`, `{"a":1}`, true},
		{"a value differs", `{"a":2}`, `{"a":1}`, false},
		{"a key is missing", `{"b":1}`, `{"a":1}`, false},
		{"empty map, empty list and null ask for nothing", `{}`, `{"a":{},"b":[],"c":null}`, true},
		{"list items may have more fields (a port's defaulted protocol)",
			`{"ports":[{"containerPort":9100,"protocol":"TCP"}]}`, `{"ports":[{"containerPort":9100}]}`, true},
		{"a list item lost (someone removed it)", `{"args":["--a"]}`, `{"args":["--a","--b"]}`, false},
		{"a list item more (the template dropped one: the hash says so)", `{"args":["--a","--b"]}`, `{"args":["--a"]}`, false},
		{"list order matters", `{"args":["--b","--a"]}`, `{"args":["--a","--b"]}`, false},
		{"a map where a list is wanted", `{"args":{}}`, `{"args":["--a"]}`, false},
		{"nested", `{"spec":{"template":{"spec":{"containers":[{"name":"sllbrd","args":["--x"]}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"sllbrd","args":["--y"]}]}}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := covers(decode(tc.have), decode(tc.want)); got != tc.covered {
				t.Errorf("covers(%s, %s) = %v, want %v", tc.have, tc.want, got, tc.covered)
			}
		})
	}
}

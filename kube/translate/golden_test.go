package translate_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestGolden translates every testdata/*.yaml (Gateway sllb-a) and compares
// the state and problems with testdata/*.golden.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			got := render(t, translateFile(t, in))
			golden := strings.TrimSuffix(in, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the output; got:\n%s", golden, got)
			}
		})
	}
}

type result struct {
	State    *model.State
	Problems []translate.Problem
}

// readable mirrors model.State with protocols, ports, byte matches and
// durations as text, so that golden files can be reviewed.
type readable struct {
	Gateway  model.Gateway
	Routes   []readableRoute
	Services []readableService
	Routers  []readableRouter
}

type readableService struct {
	Name          string
	MaxEndpoints  int
	SCTPHashPorts bool
	Liveness      string // model.Liveness.String: the annotation's form
	Endpoints     []model.Endpoint
}

type readableRoute struct {
	Name, Service                 string
	Priority                      int32
	Destinations, Sources         []netip.Prefix
	SourcePorts, DestinationPorts []string
	Protocols, ByteMatches        []string
}

type readableRouter struct {
	Name, Address, Interface string
	BGP                      *model.BGP `json:",omitempty"`
	HoldTime                 string     `json:",omitempty"`
	BFD                      model.BFD
	BFDMinTx, BFDMinRx       string
}

func texts[T fmt.Stringer](in []T) []string {
	var out []string
	for _, v := range in {
		out = append(out, v.String())
	}
	return out
}

func makeReadable(s *model.State) readable {
	out := readable{Gateway: s.Gateway}
	for _, v := range s.Services {
		out.Services = append(out.Services, readableService{Name: v.Name, MaxEndpoints: v.MaxEndpoints,
			SCTPHashPorts: v.SCTPHashPorts, Liveness: v.Liveness.String(), Endpoints: v.Endpoints})
	}
	for _, r := range s.Routes {
		out.Routes = append(out.Routes, readableRoute{
			Name: r.Name, Service: r.Service, Priority: r.Priority,
			Destinations: r.Destinations, Sources: r.Sources,
			SourcePorts: texts(r.SourcePorts), DestinationPorts: texts(r.DestinationPorts),
			Protocols: texts(r.Protocols), ByteMatches: texts(r.ByteMatches),
		})
	}
	for _, r := range s.Routers {
		v := readableRouter{Name: r.Name, Address: r.Address.String(), Interface: r.Interface,
			BGP: r.BGP, BFD: r.BFD, BFDMinTx: r.BFD.MinTx.String(), BFDMinRx: r.BFD.MinRx.String()}
		if r.BGP != nil {
			v.HoldTime = r.BGP.HoldTime.String()
		}
		out.Routers = append(out.Routers, v)
	}
	return out
}

func translateFile(t *testing.T, path string, opts ...translate.Option) result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs manifest.Objects
	if err := objs.AddFile(path, data); err != nil {
		t.Fatal(err)
	}
	snap, err := objs.Snapshot("sllb-a")
	if err != nil {
		t.Fatal(err)
	}
	state, problems, err := translate.Translate(snap, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return result{State: state, Problems: problems}
}

// render writes the state as JSON and the problems one per line.
func render(t *testing.T, r result) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# state\n")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(makeReadable(r.State)); err != nil {
		t.Fatal(err)
	}
	b.WriteString("# problems\n")
	for _, p := range r.Problems {
		b.WriteString(p.String() + "\n")
	}
	return b.Bytes()
}

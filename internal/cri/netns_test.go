package cri

import (
	"context"
	"errors"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ready is a ready sandbox of pod uid in the pod's own network namespace.
func ready(id, uid string, created int64, path string) fakeSandbox {
	return fakeSandbox{id: id, uid: uid, created: created, path: path, state: runtimeapi.PodSandboxState_SANDBOX_READY}
}

// with returns s changed by edit.
func with(s fakeSandbox, edit func(*fakeSandbox)) fakeSandbox {
	edit(&s)
	return s
}

// infoJSON is a verbose info map whose document is doc.
func infoJSON(doc string) map[string]string { return map[string]string{"info": doc} }

const uid = "6f1c1b0e-2a3d-4c5e-8f90-123456789abc"

func TestPodNetNSFound(t *testing.T) {
	other := "0a0a0a0a-0000-4000-8000-000000000000"
	notReady := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	for _, tc := range []struct {
		name         string
		sandboxes    []fakeSandbox
		ignoreFilter bool
		want         string
	}{
		{name: "one ready sandbox", sandboxes: []fakeSandbox{ready("a", uid, 10, "/var/run/netns/cni-a")}, want: "/var/run/netns/cni-a"},
		{name: "the newest of several wins", sandboxes: []fakeSandbox{
			ready("a", uid, 10, "/var/run/netns/cni-a"),
			ready("c", uid, 30, "/var/run/netns/cni-c"),
			ready("b", uid, 20, "/var/run/netns/cni-b"),
		}, want: "/var/run/netns/cni-c"},
		{name: "equal times: the same pick every time", sandboxes: []fakeSandbox{
			ready("b", uid, 10, "/var/run/netns/cni-b"),
			ready("a", uid, 10, "/var/run/netns/cni-a"),
		}, want: "/var/run/netns/cni-b"},
		{name: "a runtime ignoring the filter: newer stopped and foreign sandboxes are passed over", ignoreFilter: true, sandboxes: []fakeSandbox{
			ready("a", uid, 10, "/var/run/netns/cni-a"),
			with(ready("b", uid, 20, "/var/run/netns/cni-b"), func(s *fakeSandbox) { s.state = notReady }),
			ready("c", other, 30, "/var/run/netns/cni-c"),
		}, want: "/var/run/netns/cni-a"},
		{name: "CRI-O's document (image, pid, runtimeSpec)", sandboxes: []fakeSandbox{
			with(ready("a", uid, 10, ""), func(s *fakeSandbox) {
				s.info = infoJSON(`{"image":"registry.k8s.io/pause:3.10","pid":77,"runtimeSpec":{"ociVersion":"1.2.0","linux":{"namespaces":[{"type":"ipc","path":"/var/run/ipcns/x"},{"type":"uts","path":"/var/run/utsns/x"},{"type":"network","path":"/var/run/netns/5c3f"}]}}}`)
			}),
		}, want: "/var/run/netns/5c3f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRuntime{sandboxes: tc.sandboxes, ignoreFilter: tc.ignoreFilter}
			c := dialFake(t, f)
			got, err := c.PodNetNS(context.Background(), uid)
			if err != nil || got != tc.want {
				t.Fatalf("PodNetNS = %q, %v; want %q", got, err, tc.want)
			}
			_, list := f.calls()
			fl := list.GetFilter()
			if fl.GetLabelSelector()[PodUIDLabel] != uid || len(fl.GetLabelSelector()) != 1 || fl.GetState() == nil || fl.GetState().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
				t.Errorf("list filter %v: want the pod's UID label and READY", fl)
			}
		})
	}
}

func TestPodNetNSRefused(t *testing.T) {
	const path = "/var/run/netns/cni-a"
	edit := func(e func(*fakeSandbox)) []fakeSandbox { return []fakeSandbox{with(ready("a", uid, 10, path), e)} }
	spec := func(namespaces string) map[string]string {
		return infoJSON(`{"pid":1,"netNamespaceClosed":false,"runtimeSpec":{"linux":{"namespaces":[` + namespaces + `]}}}`)
	}
	for _, tc := range []struct {
		name      string
		sandboxes []fakeSandbox
		uid       string // default uid
		is        error  // nil: neither ErrNoSandbox nor ErrHostNetwork
		says      string
	}{
		{name: "unknown pod", sandboxes: []fakeSandbox{ready("b", "another", 10, path)}, is: ErrNoSandbox, says: "no ready pod sandbox"},
		{name: "no sandbox at all", is: ErrNoSandbox, says: "no ready pod sandbox"},
		{name: "not ready", sandboxes: edit(func(s *fakeSandbox) { s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY }), is: ErrNoSandbox},
		{name: "removed after the list", sandboxes: edit(func(s *fakeSandbox) { s.gone = true }), is: ErrNoSandbox, says: "NotFound"},
		{name: "stopped after the list", sandboxes: edit(func(s *fakeSandbox) { s.stopped = true }), is: ErrNoSandbox, says: "SANDBOX_NOTREADY"},
		{name: "namespace closed", sandboxes: edit(func(s *fakeSandbox) {
			s.info = infoJSON(`{"netNamespaceClosed":true,"runtimeSpec":{"linux":{"namespaces":[{"type":"network","path":"/var/run/netns/cni-a"}]}}}`)
		}), is: ErrNoSandbox, says: "closed"},
		{name: "host network", sandboxes: edit(func(s *fakeSandbox) { s.mode = runtimeapi.NamespaceMode_NODE; s.info = spec(`{"type":"pid"}`) }), is: ErrHostNetwork},
		{name: "container network mode", sandboxes: edit(func(s *fakeSandbox) { s.mode = runtimeapi.NamespaceMode_CONTAINER }), says: "mode CONTAINER"},
		{name: "no verbose info", sandboxes: edit(func(s *fakeSandbox) { s.info = map[string]string{} }), says: `no "info" document`},
		{name: "empty info", sandboxes: edit(func(s *fakeSandbox) { s.info = infoJSON("") }), says: `no "info" document`},
		{name: "malformed info", sandboxes: edit(func(s *fakeSandbox) { s.info = infoJSON(`{"runtimeSpec":`) }), says: "unexpected end of JSON"},
		{name: "info of another shape", sandboxes: edit(func(s *fakeSandbox) { s.info = infoJSON(`{"runtimeSpec":"linux"}`) }), says: "cannot unmarshal"},
		{name: "no runtime spec", sandboxes: edit(func(s *fakeSandbox) { s.info = infoJSON(`{"pid":1}`) }), says: "no runtimeSpec.linux"},
		{name: "no linux section", sandboxes: edit(func(s *fakeSandbox) { s.info = infoJSON(`{"runtimeSpec":{"ociVersion":"1"}}`) }), says: "no runtimeSpec.linux"},
		{name: "no network namespace in the spec", sandboxes: edit(func(s *fakeSandbox) { s.info = spec(`{"type":"pid"},{"type":"mount"}`) }), says: "no network namespace"},
		{name: "missing path", sandboxes: edit(func(s *fakeSandbox) { s.info = spec(`{"type":"network"}`) }), says: "no path"},
		{name: "two network namespaces", sandboxes: edit(func(s *fakeSandbox) {
			s.info = spec(`{"type":"network","path":"/var/run/netns/a"},{"type":"network","path":"/var/run/netns/b"}`)
		}), says: "2 network namespaces"},
		{name: "relative path", sandboxes: edit(func(s *fakeSandbox) { s.path = "var/run/netns/cni-a" }), says: "not absolute"},
		{name: "unclean path", sandboxes: edit(func(s *fakeSandbox) { s.path = "/var/run/netns/../../../proc/1/ns/net" }), says: "not clean"},
		{name: "status of another sandbox", sandboxes: edit(func(s *fakeSandbox) { s.statusID = "z" }), says: `sandbox "z"`},
		{name: "status of another pod", sandboxes: edit(func(s *fakeSandbox) { s.statusUID = "another" }), says: `pod "another"`},
		{name: "empty UID", uid: "-", says: "pod UID"},
		{name: "UID with spaces", uid: "a b", says: "pod UID"},
		{name: "overlong UID", uid: strings.Repeat("u", maxUID+1), says: "pod UID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRuntime{sandboxes: tc.sandboxes}
			c := dialFake(t, f)
			podUID := uid
			switch tc.uid {
			case "":
			case "-":
				podUID = ""
			default:
				podUID = tc.uid
			}
			got, err := c.PodNetNS(context.Background(), podUID)
			if err == nil {
				t.Fatalf("PodNetNS = %q, want an error", got)
			}
			if got != "" {
				t.Errorf("PodNetNS gave %q with the error", got)
			}
			for _, sentinel := range []error{ErrNoSandbox, ErrHostNetwork} {
				if errors.Is(err, sentinel) != (tc.is == sentinel) {
					t.Errorf("error %q: errors.Is(%v) = %v", err, sentinel, !(tc.is == sentinel))
				}
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			if n, _ := f.calls(); tc.uid != "" && n > 0 {
				t.Errorf("an invalid UID reached the runtime (%d calls)", n)
			}
			t.Log(err)
		})
	}
}

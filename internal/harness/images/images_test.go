package images

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeGo puts a stand-in for the go command first on $PATH: it records
// each call's arguments and SOURCE_DATE_EPOCH and GOARCH in the returned
// log and answers like `go run hack/image -json`, or fails when the layout
// path contains "fail".
func fakeGo(t *testing.T) (log string) {
	t.Helper()
	bin := t.TempDir()
	log = filepath.Join(t.TempDir(), "calls")
	script := `#!/bin/sh
echo "$* SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH-unset} GOARCH=${GOARCH-unset}" >>"$FAKE_GO_LOG"
version=v0.1.0-3-gabcdef012345-dirty revision=0123456789abcdef0123456789abcdef01234567 created=2025-03-04T05:06:07Z
[ -n "$SOURCE_DATE_EPOCH" ] && created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
while [ $# -gt 0 ]; do
	case $1 in
	-name) name=$2; shift ;;
	-layout) layout=$2; shift ;;
	-archive) archive=$2; shift ;;
	-version) version=$2; shift ;;
	-revision) revision=$2; shift ;;
	esac
	shift
done
case $layout in *fail*) echo "image: go build: it broke" >&2; exit 1 ;; esac
digest=$(printf %s "$name" | sha256sum | cut -c1-64)
printf '{"name":"%s","ref":"%s:%s","digest":"sha256:%s","layout":"%s","archive":"%s","version":"%s","revision":"%s","created":"%s","reused":true}\n' \
	"$name" "$name" "$version" "$digest" "$layout" "$archive" "$version" "$revision" "$created"
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_GO_LOG", log)
	return log
}

func calls(t *testing.T, log string) []string {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestBuildRunsTheToolOncePerImageWithOneStamp: three runs of the tool,
// sllbrd first with the caller's stamp, the others with the stamp sllbrd's
// build resolved; GOARCH reaches the tool only as -arch.
func TestBuildRunsTheToolOncePerImageWithOneStamp(t *testing.T) {
	log := fakeGo(t)
	t.Setenv("GOARCH", "riscv64")     // the caller's: must not build the tool for riscv64
	t.Setenv("SOURCE_DATE_EPOCH", "") // restored after the test
	os.Unsetenv("SOURCE_DATE_EPOCH")
	dir := filepath.Join(t.TempDir(), "images")
	s, err := Build(context.Background(), Options{Dir: dir, Arch: "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	const version, revision = "v0.1.0-3-gabcdef012345-dirty", "0123456789abcdef0123456789abcdef01234567"
	epoch := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC).Unix()
	common := " -json -reuse "
	want := []string{
		"run " + toolPackage + common + "-main ./cmd/sllbrd -name ghcr.io/sllbrd/sllbrd -arch arm64 -layout " + dir + "/sllbrd-image -archive " + dir + "/sllbrd-image.tar SOURCE_DATE_EPOCH=unset GOARCH=unset",
		"run " + toolPackage + common + "-main ./internal/harness/node/cmd/pause -name localhost/sllbrd-pause -arch arm64 -layout " + dir + "/pause-image -archive " + dir + "/pause-image.tar -version " + version + " -revision " + revision + " SOURCE_DATE_EPOCH=" + strconv.FormatInt(epoch, 10) + " GOARCH=unset",
		"run " + toolPackage + common + "-main ./internal/harness/lab/cmd/labresponder -name localhost/sllbrd-responder -arch arm64 -layout " + dir + "/labresponder-image -archive " + dir + "/labresponder-image.tar -version " + version + " -revision " + revision + " SOURCE_DATE_EPOCH=" + strconv.FormatInt(epoch, 10) + " GOARCH=unset",
	}
	got := calls(t, log)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tool runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, im := range s.All() {
		name := []string{SllbrdName, PauseName, ResponderName}[i]
		layout := filepath.Join(dir, []string{"sllbrd", "pause", "labresponder"}[i]+"-image")
		if im.Name != name || im.Ref != name+":"+version || len(im.Digest) != len("sha256:")+64 ||
			im.Layout != layout || im.Archive != layout+".tar" || !im.Reused {
			t.Errorf("image %d: %+v", i, im)
		}
	}
}

// TestBuildPassesTheCallersStamp: Options.Version and SOURCE_DATE_EPOCH
// reach the first run as they reach `make image`.
func TestBuildPassesTheCallersStamp(t *testing.T) {
	log := fakeGo(t)
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if _, err := Build(context.Background(), Options{Dir: t.TempDir(), Version: "v9.9.9"}); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls(t, log) {
		if !strings.Contains(c, " -version v9.9.9 ") || !strings.HasSuffix(c, " SOURCE_DATE_EPOCH=1700000000 GOARCH=unset") {
			t.Errorf("run %d: %s, want -version v9.9.9 and the caller's epoch", i, c)
		}
	}
}

// TestBuildReportsTheToolsFailure: the tool's message is in the error and
// nothing after the failed image is built.
func TestBuildReportsTheToolsFailure(t *testing.T) {
	log := fakeGo(t)
	_, err := Build(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "fail")})
	if err == nil || !strings.Contains(err.Error(), "it broke") || !strings.Contains(err.Error(), "./cmd/sllbrd") {
		t.Errorf("err %v, want the tool's message about ./cmd/sllbrd", err)
	}
	if n := len(calls(t, log)); n != 1 {
		t.Errorf("%d runs after a failure, want 1", n)
	}
	if _, err := Build(context.Background(), Options{}); err == nil {
		t.Error("no directory accepted")
	}
}

// TestReportMustBeAboutTheImageAskedFor: a report of another name, path,
// digest or without a stamp is refused.
func TestReportMustBeAboutTheImageAskedFor(t *testing.T) {
	j := job{main: pauseMain, name: PauseName, dir: "/d"}
	good := `{"ref":"localhost/sllbrd-pause:v1","digest":"sha256:` + strings.Repeat("ab", 32) +
		`","layout":"/d/pause-image","archive":"/d/pause-image.tar","version":"v1","revision":"r","created":"2025-03-04T05:06:07Z"}`
	img, st, err := parseReport([]byte(good), j)
	if err != nil || img.Ref != "localhost/sllbrd-pause:v1" || st.Version != "v1" || st.Created.Unix() != 1741064767 {
		t.Fatalf("%+v %+v %v", img, st, err)
	}
	for _, bad := range []string{
		strings.Replace(good, "localhost/sllbrd-pause:v1", "localhost/other:v1", 1),
		strings.Replace(good, "localhost/sllbrd-pause:v1", "localhost/sllbrd-pause:", 1),
		strings.Replace(good, "sha256:ab", "sha256:zz", 1),
		strings.Replace(good, "/d/pause-image.tar", "/elsewhere.tar", 1),
		strings.Replace(good, `"/d/pause-image"`, `"/d/x"`, 1),
		strings.Replace(good, `"version":"v1"`, `"version":""`, 1),
		strings.Replace(good, "2025-03-04T05:06:07Z", "yesterday", 1),
		"not json",
	} {
		if _, _, err := parseReport([]byte(bad), j); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

package main

import (
	"bufio"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadOnlyMappings(t *testing.T) {
	maps := `00400000-01d6c000 r-xp 00000000 fd:01 4242 /sllbrd
01d6c000-03abf000 r--p 0196c000 fd:01 4242 /sllbrd
03abf000-03b62000 rw-p 036bf000 fd:01 4242 /sllbrd
03b62000-05c00000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fd:01 4243 /other
7f0000002000-7f0000003000 r--s 00000000 fd:01 4242 /sllbrd
7f0000004000-7f0000005000 r--p 00000000 fd:02 4242 /same-inode-other-device
`
	got, err := readOnlyMappings(bufio.NewScanner(strings.NewReader(maps)), unix.Mkdev(0xfd, 1), 4242)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]uintptr{{0x400000, 0x1d6c000}, {0x1d6c000, 0x3abf000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %x, want %x (text and rodata only: not the writable, shared or other files' mappings)", got, want)
	}
	if _, err := readOnlyMappings(bufio.NewScanner(strings.NewReader("zz-00 r-xp 0 fd:01 4242 /sllbrd\n")), unix.Mkdev(0xfd, 1), 4242); err == nil {
		t.Error("a bad range was accepted")
	}
}

// TestReleaseExecutablePages releases the test binary's own read-only pages
// and keeps running: the file-backed resident set drops, the code still
// works (it is paged back in).
func TestReleaseExecutablePages(t *testing.T) {
	before := fileRSS()
	if err := releaseExecutablePages(); err != nil {
		t.Fatal(err)
	}
	after := fileRSS()
	if before == 0 || after >= before {
		t.Errorf("RssFile %d KiB before, %d KiB after: want a drop", before>>10, after>>10)
	}
	if err := dropUnmappedPages(); err != nil {
		t.Fatal(err)
	}
	t.Logf("RssFile %d KiB -> %d KiB", before>>10, after>>10)
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// startupPagesDelay is how long after it first became ready sllbrd
// releases its binary's pages: long enough for the BGP sessions to come up,
// so that what is released is start-up code only. remapDelay is how long
// the pages still in use have to come back before the others are dropped
// from the page cache.
const (
	startupPagesDelay = 10 * time.Second
	remapDelay        = 5 * time.Second
)

// releaseStartupPages waits until sllbrd is first ready, then
// startupPagesDelay, then releases the pages of its binary once: it unmaps
// them (releaseExecutablePages), waits remapDelay while the pages still in
// use are mapped back, returns the free heap to the kernel with a garbage
// collection (debug.FreeOSMemory; the collection reads the stack maps of
// every goroutine, as each later one does), and drops the pages that
// nothing maps any more from the page cache (dropUnmappedPages), so that
// they leave the pod's memory too.
func (d *daemon) releaseStartupPages(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for ready := false; !ready; ready, _ = d.ready() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	if !sleepCtx(ctx, startupPagesDelay) {
		return
	}
	before := fileRSS()
	if err := releaseExecutablePages(); err != nil {
		d.log.Warn("releasing the start-up pages of the binary", "err", err)
		return
	}
	after := fileRSS()
	if !sleepCtx(ctx, remapDelay) {
		return
	}
	debug.FreeOSMemory()
	if err := dropUnmappedPages(); err != nil {
		d.log.Warn("dropping the unused pages of the binary from the page cache", "err", err)
	}
	d.log.Info("released the start-up pages of the binary", "file_rss_before_kib", before>>10,
		"file_rss_after_kib", after>>10, "file_rss_now_kib", fileRSS()>>10)
}

// sleepCtx waits d and reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// dropUnmappedPages asks the kernel to drop the binary's pages that no
// process maps from the page cache (POSIX_FADV_DONTNEED skips mapped
// pages): start-up code leaves memory instead of waiting for reclaim.
func dropUnmappedPages() error {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise %s: %w", f.Name(), err)
	}
	return nil
}

// releaseExecutablePages unmaps the read-only mappings of the running
// binary (its code and read-only data) with madvise(MADV_DONTNEED). Package
// initialisation of the Kubernetes, GoBGP and protobuf libraries, flag
// parsing and the first programming touch about three times the pages that
// sllbrd uses afterwards, and the kernel maps 64 KiB around every fault: all
// of it stays in the resident set although it is never used again. The
// pages stay in the page cache (shared, reclaimable): what sllbrd still uses
// comes back on first touch as a minor fault. The writable data mapping is
// never touched (MADV_DONTNEED on it would lose its content).
func releaseExecutablePages() error {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return fmt.Errorf("stat /proc/self/exe: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	ranges, err := readOnlyMappings(bufio.NewScanner(f), st.Dev, st.Ino)
	if err != nil {
		return err
	}
	if len(ranges) == 0 {
		return errors.New("no read-only mapping of the binary in /proc/self/maps")
	}
	for _, r := range ranges {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("madvise %#x-%#x: %w", r[0], r[1], errno)
		}
	}
	return nil
}

// readOnlyMappings returns the address ranges of the mappings of the file
// (dev, inode) that are neither writable nor shared, from /proc/PID/maps
// lines "start-end perms offset major:minor inode path".
func readOnlyMappings(sc *bufio.Scanner, dev, inode uint64) ([][2]uintptr, error) {
	wantDev := fmt.Sprintf("%02x:%02x", unix.Major(dev), unix.Minor(dev))
	var out [][2]uintptr
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[3] != wantDev || f[4] != strconv.FormatUint(inode, 10) {
			continue
		}
		if perms := f[1]; len(perms) != 4 || perms[1] == 'w' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("maps: bad range %q", f[0])
		}
		out = append(out, [2]uintptr{uintptr(start), uintptr(end)})
	}
	return out, sc.Err()
}

// fileRSS returns RssFile of /proc/self/status in bytes (0 if unknown).
func fileRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			f := strings.Fields(v)
			if n, err := strconv.ParseUint(f[0], 10, 64); err == nil && len(f) == 2 {
				return n << 10
			}
		}
	}
	return 0
}

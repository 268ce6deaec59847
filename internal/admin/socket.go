package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Permissions of what Listen creates.
const (
	SocketMode fs.FileMode = 0o660 // owner and group read and write
	DirMode    fs.FileMode = 0o750 // owner all, group traverse
)

// maxSocketPath is the longest path a unix socket address holds (sun_path
// less its terminating NUL).
const maxSocketPath = 107

// listenSocket creates the socket at path: its directory if missing (mode
// DirMode, group gid), a stale socket of an earlier run removed, the new
// socket with mode SocketMode and group gid (when gid >= 0).
func listenSocket(path string, gid int) (*net.UnixListener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("admin socket %s: path longer than %d bytes", path, maxSocketPath)
	}
	if err := ensureDir(filepath.Dir(path), gid); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	if err := setOwnership(path, SocketMode, gid); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ln, nil
}

// ensureDir creates dir when missing with DirMode and group gid. An
// existing directory is left as it is (it may be /run itself), unless it
// is ours and anyone may replace the socket in it (writable by others
// without the sticky bit, as a Kubernetes emptyDir is): then it gets
// DirMode and gid too.
func ensureDir(dir string, gid int) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("admin socket directory %s: not a directory", dir)
	case err == nil && fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 && ownedBy(fi, os.Geteuid()):
		return setOwnership(dir, DirMode, gid)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("admin socket directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("admin socket directory %s: %w", dir, err)
	}
	return setOwnership(dir, DirMode, gid)
}

func ownedBy(fi fs.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// setOwnership sets mode (whatever the umask did) and, when gid >= 0, the
// group.
func setOwnership(path string, mode fs.FileMode, gid int) error {
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	if gid >= 0 {
		if err := os.Chown(path, -1, gid); err != nil {
			return fmt.Errorf("admin socket: group %d: %w", gid, err)
		}
	}
	return nil
}

// removeStale removes a socket left at path by an earlier run. Anything
// else at path, or a socket something still answers on, is an error.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("admin socket %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("admin socket %s: exists and is not a socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("admin socket %s: another process is serving it", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("admin socket %s: removing the stale socket: %w", path, err)
	}
	return nil
}

// peer is a connected process as the kernel saw it connect (SO_PEERCRED).
type peer struct {
	uid, gid uint32
	pid      int32
}

// peerOf returns c's peer credentials.
func peerOf(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	if credErr != nil {
		return peer{}, fmt.Errorf("peer credentials: %w", credErr)
	}
	return peer{uid: cred.Uid, gid: cred.Gid, pid: cred.Pid}, nil
}

// access decides who may use the socket, behind the file permissions:
// root, sllbrd's own user, and members of the socket's group.
type access struct {
	euid   int
	gid    int                            // -1: no group
	groups func(pid int32) ([]int, error) // supplementary groups of a process
}

func newAccess(gid int) access {
	return access{euid: os.Geteuid(), gid: gid, groups: procGroups}
}

func (a access) allow(p peer) error {
	if p.uid == 0 || int(p.uid) == a.euid {
		return nil
	}
	if a.gid >= 0 {
		if int(p.gid) == a.gid {
			return nil
		}
		if groups, err := a.groups(p.pid); err == nil && slices.Contains(groups, a.gid) {
			return nil
		}
	}
	return fmt.Errorf("permission denied: uid %d (pid %d) is neither root, sllbrd's user nor in the admin socket's group", p.uid, p.pid)
}

// procGroups reads the supplementary groups of process pid from
// /proc/PID/status ("Groups:" line).
func procGroups(pid int32) ([]int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/status")
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Groups:")
		if !ok {
			continue
		}
		var out []int
		for _, f := range strings.Fields(rest) {
			g, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("/proc/%d/status: groups %q: %w", pid, rest, err)
			}
			out = append(out, g)
		}
		return out, nil
	}
	return nil, fmt.Errorf("/proc/%d/status: no Groups line", pid)
}

// ParseGroup resolves a group given by number or by name (from
// /etc/group: a name needs that file in the image, a number does not).
func ParseGroup(s string) (int, error) {
	if gid, err := strconv.Atoi(s); err == nil {
		if gid < 0 {
			return 0, fmt.Errorf("group %q: must not be negative", s)
		}
		return gid, nil
	}
	g, err := user.LookupGroup(s)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w (give its number instead)", s, err)
	}
	return strconv.Atoi(g.Gid)
}

package multinet

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// logger writes one line per action to multinet's log file, each naming the
// command, the pod and the container. When the file cannot be written,
// lines go to stderr (which the runtime logs) with the reason.
type logger struct {
	w      io.Writer
	close  func() error
	prefix string
}

// openLogger opens path for appending (creating it and its directory); an
// empty path logs nothing.
func openLogger(path string, e cniEnv) *logger {
	fields := []string{e.Command}
	if p := e.pod(); p != "" {
		fields = append(fields, "pod="+p)
	}
	fields = append(fields, "container="+e.ContainerID, "ifname="+e.IfName)
	l := &logger{w: io.Discard, close: func() error { return nil }, prefix: strings.Join(fields, " ")}
	if path == "" {
		return l
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		l.fallback(err)
		return l
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		l.fallback(err)
		return l
	}
	l.w, l.close = f, f.Close
	return l
}

// fallback sends the log to stderr after saying why.
func (l *logger) fallback(err error) {
	l.w = os.Stderr
	l.printf("log file unusable, logging to stderr: %v", err)
}

// printf writes one line: time, command, pod, container, message.
func (l *logger) printf(format string, args ...any) {
	line := fmt.Sprintf("%s %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), l.prefix, fmt.Sprintf(format, args...))
	if _, err := io.WriteString(l.w, line); err != nil && l.w != os.Stderr {
		l.fallback(err)
		_, _ = io.WriteString(l.w, line) // stderr is the last resort: nowhere to report its failure
	}
}

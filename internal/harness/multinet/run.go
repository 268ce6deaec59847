package multinet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// maxStdin bounds the configuration read from stdin.
const maxStdin = 1 << 20

// rollbackTimeout bounds undoing a failed ADD, which runs even when the
// ADD's context was cancelled.
const rollbackTimeout = 2 * time.Minute

// Main runs one CNI command as a plugin binary does: environ is the process
// environment (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME,
// CNI_ARGS, CNI_PATH; the rest is passed on to delegates), stdin holds the
// configuration (Config), the result or the CNI error object goes to
// stdout. It returns the exit status. dial opens the Kubernetes API
// (DialKubeconfig).
func Main(ctx context.Context, environ []string, stdin io.Reader, stdout io.Writer, dial Dialer) int {
	out, err := run(ctx, environ, stdin, dial)
	if err != nil {
		out = ErrorJSON(err)
	}
	if _, werr := stdout.Write(out); werr != nil || err != nil {
		return 1
	}
	return 0
}

// invocation is one command with its validated inputs.
type invocation struct {
	env    cniEnv
	conf   Config
	defNet NetConf
	cache  cache
	log    *logger
	dial   Dialer
}

func run(ctx context.Context, environ []string, stdin io.Reader, dial Dialer) ([]byte, error) {
	e, err := parseEnv(environ)
	if err != nil {
		return nil, err
	}
	if e.Command == cmdVersion {
		return []byte(`{"cniVersion":"` + CNIVersion + `","supportedVersions":["` + CNIVersion + `"]}` + "\n"), nil
	}
	data, err := io.ReadAll(io.LimitReader(stdin, maxStdin+1))
	if err != nil {
		return nil, codef(CodeIOFailure, "read configuration from stdin: %w", err)
	}
	if len(data) > maxStdin {
		return nil, codef(CodeInvalidConfig, "configuration on stdin is larger than %d bytes", maxStdin)
	}
	conf, err := ParseConfig(bytes.TrimSpace(data))
	if err != nil {
		return nil, withCode(CodeInvalidConfig, err)
	}
	defNet, err := conf.defaultNetConf()
	if err != nil {
		return nil, withCode(CodeInvalidConfig, err)
	}
	inv := &invocation{env: e, conf: conf, defNet: defNet, cache: cache(conf.CacheDir), log: openLogger(conf.LogFile, e), dial: dial}
	var out []byte
	switch e.Command {
	case cmdAdd:
		out, err = inv.add(ctx)
	case cmdDel:
		err = inv.del(ctx)
	case cmdCheck:
		err = inv.check(ctx)
	}
	if err != nil {
		inv.log.printf("failed: %v", err)
	} else {
		inv.log.printf("done")
	}
	if cerr := inv.log.close(); cerr != nil {
		// The command's outcome stands: its networks exist (or not) whatever the log.
		fmt.Fprintf(os.Stderr, "%s: closing log file %s: %v\n", TypeName, conf.LogFile, cerr)
	}
	return out, err
}

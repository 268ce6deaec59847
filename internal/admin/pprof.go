package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"time"
)

// CheckLoopback accepts only host:port whose host is a loopback IP address
// (127.0.0.0/8, ::1): profiles expose memory contents and cost CPU, so
// they are never served to the network. Reach them with kubectl
// port-forward or from inside the pod.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want host:port: %w", addr, err)
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Unmap().IsLoopback() || a.Zone() != "" {
		return fmt.Errorf("%q: the host must be a loopback address (127.0.0.1 or ::1), not %q", addr, host)
	}
	return nil
}

// PprofHandler serves net/http/pprof under /debug/pprof/, and nothing else.
func PprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// pprofWriteTimeout must exceed the longest profile asked for
// (/debug/pprof/profile?seconds=N, default 30).
const pprofWriteTimeout = 5 * time.Minute

// ListenPprof listens on addr for ServePprof; CheckLoopback must accept
// addr.
func ListenPprof(ctx context.Context, addr string) (net.Listener, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof: listen on %s: %w", addr, err)
	}
	return ln, nil
}

// ServePprof serves PprofHandler on ln (which it closes) until ctx ends.
func ServePprof(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	srv := &http.Server{Handler: PprofHandler(), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: pprofWriteTimeout,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	log.Info("pprof listening", "address", ln.Addr().String())
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("pprof: serve on %s: %w", ln.Addr(), err)
	}
	return nil
}

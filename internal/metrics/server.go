package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the admin HTTP endpoint: /metrics, /healthz and /readyz.
type Server struct {
	addr     string
	http     *http.Server
	shutdown time.Duration
	log      *slog.Logger
}

type serverOptions struct {
	log                                     *slog.Logger
	readHeader, read, write, idle, shutdown time.Duration
}

// ServerOption configures a Server.
type ServerOption func(*serverOptions)

// WithLogger sets where the server logs (scrape errors, serve errors);
// default slog.Default().
func WithLogger(l *slog.Logger) ServerOption {
	return func(o *serverOptions) { o.log = l }
}

// WithTimeouts sets the time allowed to read a whole request and to write a
// response (defaults 10 s and 30 s; the header must arrive within 5 s).
func WithTimeouts(read, write time.Duration) ServerOption {
	return func(o *serverOptions) { o.read, o.write = read, write }
}

// WithShutdownTimeout bounds how long Run waits for requests in flight when
// its context ends (default 5 s).
func WithShutdownTimeout(d time.Duration) ServerOption {
	return func(o *serverOptions) { o.shutdown = d }
}

// NewServer returns a server that will listen on exactly addr (sllbrd's
// default is the loopback 127.0.0.1:9100) and serve reg's metrics. ready
// answers /readyz: ready, or the reasons it is not, one per line.
func NewServer(addr string, reg *prometheus.Registry, ready func() (bool, []string), opts ...ServerOption) *Server {
	o := serverOptions{
		log:        slog.Default(),
		readHeader: 5 * time.Second, read: 10 * time.Second, write: 30 * time.Second,
		idle: 60 * time.Second, shutdown: 5 * time.Second,
	}
	for _, f := range opts {
		f(&o)
	}
	s := &Server{addr: addr, shutdown: o.shutdown, log: o.log}
	s.http = &http.Server{
		Handler:           newMux(reg, ready, o.log),
		ReadHeaderTimeout: min(o.readHeader, o.read),
		ReadTimeout:       o.read,
		WriteTimeout:      o.write,
		IdleTimeout:       o.idle,
		ErrorLog:          slog.NewLogLogger(o.log.Handler(), slog.LevelWarn),
	}
	return s
}

// Handler returns the server's routes, for mounting elsewhere.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Run listens on the server's address and serves until ctx ends, then shuts
// down gracefully. It returns nil after a graceful shutdown.
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s: %w", s.addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln (which it closes) until ctx ends, then shuts down
// gracefully. A Server serves once: Run or Serve, not both.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.log.Info("admin endpoint listening", "address", ln.Addr().String())
	done := make(chan error, 1)
	go func() { done <- s.http.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("metrics: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdown)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		_ = s.http.Close()
		<-done
		return fmt.Errorf("metrics: shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: serve on %s: %w", ln.Addr(), err)
	}
	return nil
}

// newMux routes exactly /metrics, /healthz and /readyz; anything else is 404
// (and another method than GET or HEAD on those paths 405).
func newMux(reg *prometheus.Registry, ready func() (bool, []string), log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      scrapeErrorLog{log},
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      reg, // counts scrape errors in promhttp_metric_handler_errors_total
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reasons := ready()
		switch {
		case ok:
			writeText(w, http.StatusOK, "ok\n")
		case len(reasons) == 0:
			writeText(w, http.StatusServiceUnavailable, "not ready\n")
		default:
			writeText(w, http.StatusServiceUnavailable, strings.Join(reasons, "\n")+"\n")
		}
	})
	return mux
}

func writeText(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// scrapeErrorLog logs what promhttp reports (collector errors, failed
// writes) as warnings.
type scrapeErrorLog struct{ log *slog.Logger }

func (l scrapeErrorLog) Println(v ...any) {
	l.log.Warn("metrics scrape: " + strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}

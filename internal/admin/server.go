package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Backend answers the commands; the server has validated each request.
type Backend interface {
	Routes(ctx context.Context) (Routes, error)
	Services(ctx context.Context) (Services, error)
	Sessions(ctx context.Context) (Sessions, error)
	Fragments(ctx context.Context) (Fragments, error)
	Config(ctx context.Context) (Config, error)
	Explain(ctx context.Context, f Flow) (Explanation, error)
	// LogLevel sets the level when level is not empty, and returns the
	// level in effect (with the previous one when it changed).
	LogLevel(ctx context.Context, level string) (LogLevel, error)
}

// Defaults of a Server.
const (
	DefaultTimeout  = 10 * time.Second // per connection: read, answer, write
	DefaultMaxConns = 8                // connections served at once
)

// Server serves the admin socket. Create it with Listen.
type Server struct {
	ln      net.Listener // retries temporary accept failures (Diagnostics.Listener)
	path    string
	access  access
	backend Backend
	log     *slog.Logger
	timeout time.Duration
	slots   chan struct{}
}

type serverOptions struct {
	gid      int
	log      *slog.Logger
	diag     *Diagnostics
	timeout  time.Duration
	maxConns int
}

// Option configures Listen.
type Option func(*serverOptions)

// WithGroup gives the socket (and the directory Listen creates) to group
// gid, whose members may then use it; default none (-1): only root and
// sllbrd's own user.
func WithGroup(gid int) Option { return func(o *serverOptions) { o.gid = gid } }

// WithLogger sets where refused connections and failed requests are logged.
func WithLogger(l *slog.Logger) Option { return func(o *serverOptions) { o.log = l } }

// WithDiagnostics reports the socket's failed accepts to d, under
// ServerAdminSocket (default: a Diagnostics of the server's own, which
// logs them).
func WithDiagnostics(d *Diagnostics) Option { return func(o *serverOptions) { o.diag = d } }

// WithTimeout bounds each connection: reading the request, answering it
// and writing the response (default DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(o *serverOptions) { o.timeout = d } }

// WithMaxConns bounds the connections served at once (default
// DefaultMaxConns); more are refused with an error response.
func WithMaxConns(n int) Option { return func(o *serverOptions) { o.maxConns = n } }

// Listen creates the socket at path (see the package documentation for the
// permissions) and returns a server for b. Serve must be called to answer
// and, at the end, to remove the socket.
func Listen(path string, b Backend, opts ...Option) (*Server, error) {
	o := serverOptions{gid: -1, log: slog.Default(), timeout: DefaultTimeout, maxConns: DefaultMaxConns}
	for _, f := range opts {
		f(&o)
	}
	if o.diag == nil {
		o.diag = NewDiagnostics(o.log)
	}
	ln, err := listenSocket(path, o.gid)
	if err != nil {
		return nil, err
	}
	return &Server{ln: o.diag.Listener(ServerAdminSocket, ln), path: path, access: newAccess(o.gid), backend: b, log: o.log,
		timeout: o.timeout, slots: make(chan struct{}, max(1, o.maxConns))}, nil
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Serve answers connections until ctx ends, then closes and removes the
// socket and waits for the connections in progress (each bounded by the
// timeout). Temporary accept failures (EMFILE, ...) are retried with
// backoff; another accept failure closes and removes the socket too, and
// is returned.
func (s *Server) Serve(ctx context.Context) error {
	s.log.Info("admin socket listening", "path", s.path)
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = s.ln.Close() })
	defer stop()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			_ = s.ln.Close()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("admin socket %s: accept: %w", s.path, err)
		}
		c := conn.(*net.UnixConn) // from a unix listener
		select {
		case s.slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-s.slots }()
				s.serveConn(ctx, c)
			})
		default:
			s.refuse(c, errors.New("busy: too many admin connections at once"))
		}
	}
}

// serveConn answers the one request of c.
func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(s.timeout))
	p, err := peerOf(c)
	if err == nil {
		err = s.access.allow(p)
	}
	if err != nil {
		s.log.Warn("admin connection refused", "err", err)
		writeResponse(c, Response{Error: err.Error()})
		return
	}
	req, err := readRequest(c)
	if err != nil {
		writeResponse(c, Response{Error: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	result, err := s.dispatch(ctx, req)
	if err != nil {
		s.log.Debug("admin request failed", "command", req.Command, "topic", req.Topic, "err", err)
		writeResponse(c, Response{Error: err.Error()})
		return
	}
	raw, err := json.Marshal(result)
	if err != nil {
		writeResponse(c, Response{Error: fmt.Sprintf("encoding the result: %v", err)})
		return
	}
	s.log.Debug("admin request", "command", req.Command, "topic", req.Topic, "uid", p.uid, "pid", p.pid)
	writeResponse(c, Response{Result: raw})
}

// refuse answers c with err and closes it, without blocking Serve for
// longer than a short write.
func (s *Server) refuse(c *net.UnixConn, err error) {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	writeResponse(c, Response{Error: err.Error()})
	_ = c.Close()
}

// readRequest reads and validates one request of at most MaxRequestBytes.
func readRequest(r io.Reader) (Request, error) {
	lr := &io.LimitedReader{R: r, N: MaxRequestBytes + 1}
	dec := json.NewDecoder(lr)
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		if lr.N <= 0 {
			return Request{}, fmt.Errorf("request longer than %d bytes", MaxRequestBytes)
		}
		return Request{}, fmt.Errorf("reading the request: %w", err)
	}
	if err := req.Validate(); err != nil {
		return Request{}, err
	}
	return req, nil
}

// dispatch calls the backend for a validated request.
func (s *Server) dispatch(ctx context.Context, req Request) (any, error) {
	b := s.backend
	switch req.Command {
	case CommandExplain:
		return b.Explain(ctx, *req.Flow)
	case CommandLogLevel:
		return b.LogLevel(ctx, req.Level)
	}
	switch req.Topic {
	case TopicRoutes:
		return b.Routes(ctx)
	case TopicServices:
		return b.Services(ctx)
	case TopicEndpoints:
		svcs, err := b.Services(ctx)
		return svcs.Endpoints(), err
	case TopicSessions:
		return b.Sessions(ctx)
	case TopicFragments:
		return b.Fragments(ctx)
	default: // TopicConfig; Validate admits no other
		return b.Config(ctx)
	}
}

// Endpoints lists the endpoints of every Service.
func (s Services) Endpoints() Endpoints {
	out := Endpoints{Generation: s.Generation, Endpoints: []Endpoint{}}
	for _, svc := range s.Services {
		out.Endpoints = append(out.Endpoints, svc.Endpoints...)
	}
	return out
}

func writeResponse(w io.Writer, r Response) {
	// The client may be gone; nothing to do about a failed write.
	_ = json.NewEncoder(w).Encode(r)
}

package apiserver_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// outage is a TCP proxy between a source and kube-apiserver that a test can
// cut: while cut it refuses connections and has closed the open ones, so the
// source finds the API server unreachable while the test keeps writing
// through the server's own address. TLS passes through untouched (the
// serving certificate covers 127.0.0.1).
type outage struct {
	t       *testing.T
	backend string
	addr    string // host:port the source connects to

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newOutage proxies a loopback port to backend (host:port) until the test
// ends.
func newOutage(t *testing.T, backend string) *outage {
	o := &outage{t: t, backend: backend, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.addr = ln.Addr().String()
	o.serve(ln)
	t.Cleanup(func() { o.Cut(); o.wg.Wait() })
	return o
}

func (o *outage) serve(ln net.Listener) {
	o.ln = ln
	o.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.wg.Go(func() { o.pipe(c) })
		}
	})
}

func (o *outage) pipe(c net.Conn) {
	b, err := net.Dial("tcp", o.backend)
	if err != nil {
		c.Close()
		return
	}
	if !o.track(c, b) {
		return
	}
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(b, c)
	go cp(c, b)
	<-done
	o.untrack(c, b)
	<-done
}

// track registers both ends, or closes them when the proxy is cut.
func (o *outage) track(conns ...net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		o.conns[c] = struct{}{}
	}
	return true
}

func (o *outage) untrack(conns ...net.Conn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(o.conns, c)
	}
}

// Cut stops accepting and closes every proxied connection.
func (o *outage) Cut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln == nil {
		return
	}
	o.ln.Close()
	o.ln = nil
	for c := range o.conns {
		c.Close()
		delete(o.conns, c)
	}
}

// Restore accepts connections again on the same address.
func (o *outage) Restore() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln != nil {
		return
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		o.t.Fatalf("outage: listen again on %s: %v", o.addr, errors.Unwrap(err))
	}
	o.serve(ln)
}

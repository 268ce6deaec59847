package controller_test

import (
	"io"
	"net/http"
	"path"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// lagging returns a copy of cfg whose watches of the resources named in
// delays (plural, as in the URL: "pods", "endpointslices") reach the
// client late: every piece of a watch response is handed on delays[r]
// after it arrived (the first sync too, where client-go lists through a
// watch). A controller on cfg has caches behind the API server by about
// that much, resource by resource, as a replica whose watches lag (a
// loaded API server, a slow link, a large namespace's pod watch).
func lagging(cfg *rest.Config, delays map[string]time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &lagTransport{next: rt, delays: delays} })
	return c
}

type lagTransport struct {
	next   http.RoundTripper
	delays map[string]time.Duration
}

func (l *lagTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	delay := l.delays[path.Base(req.URL.Path)]
	if err != nil || delay == 0 || req.URL.Query().Get("watch") != "true" {
		return resp, err
	}
	resp.Body = newLagBody(resp.Body, delay)
	return resp, nil
}

// lagBody hands on what src yields delay after it came.
type lagBody struct {
	src    io.ReadCloser
	delay  time.Duration
	pieces chan piece
	done   chan struct{}
	close  sync.Once

	cur []byte // read by Read only
	err error
}

type piece struct {
	at   time.Time
	data []byte
	err  error
}

func newLagBody(src io.ReadCloser, delay time.Duration) *lagBody {
	b := &lagBody{src: src, delay: delay, pieces: make(chan piece, 1024), done: make(chan struct{})}
	go b.pump()
	return b
}

func (b *lagBody) pump() {
	for {
		buf := make([]byte, 32<<10)
		n, err := b.src.Read(buf)
		select {
		case b.pieces <- piece{at: time.Now(), data: buf[:n], err: err}:
		case <-b.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (b *lagBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		var next piece
		select {
		case next = <-b.pieces:
		case <-b.done:
			return 0, io.ErrClosedPipe
		}
		select {
		case <-time.After(time.Until(next.at.Add(b.delay))):
		case <-b.done:
			return 0, io.ErrClosedPipe
		}
		b.cur, b.err = next.data, next.err
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (b *lagBody) Close() error {
	b.close.Do(func() { close(b.done) })
	return b.src.Close()
}

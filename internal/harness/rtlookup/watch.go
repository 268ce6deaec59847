package rtlookup

import (
	"sync"
	"sync/atomic"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// Check judges one answer: "" when it is what the test wants, else why not.
// err is Get's error (the kernel would not route the packet).
type Check func(q Query, a Answer, err error) string

// Result counts what a Watch saw.
type Result struct {
	Lookups  int    // answers received (a round asks every query once)
	Bad      int    // answers Check rejected
	FirstBad string // the first rejected query and why
	Err      error  // the loop could not run (namespace, socket)
}

// Watch asks, on its own NETLINK_ROUTE socket in namespace ns, how each
// query is routed, round after round, and judges each answer with check,
// until the returned stop is called; stop waits for the loop and returns
// the counts. At least one round runs.
func Watch(ns string, queries []Query, check Check) (stop func() Result) {
	var done atomic.Bool
	var res Result
	var wg sync.WaitGroup
	wg.Go(func() {
		res.Err = netns.Do(ns, func() error {
			c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
			if err != nil {
				return err
			}
			defer c.Close()
			for first := true; first || !done.Load(); first = false {
				for _, q := range queries {
					a, err := Get(c, q)
					res.Lookups++
					if why := check(q, a, err); why != "" {
						res.Bad++
						if res.FirstBad == "" {
							res.FirstBad = q.String() + ": " + why
						}
					}
				}
			}
			return nil
		})
	})
	return func() Result {
		done.Store(true)
		wg.Wait()
		return res
	}
}

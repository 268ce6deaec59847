package translate

// Option adjusts what Translate checks.
type Option func(*options)

type options struct {
	// copyRange is how many bytes of each packet, from the start of the IP
	// header, the dataplane sees (the nfqueue copy range); 0: unknown, byte
	// matches are not checked against it.
	copyRange int
}

// WithCopyRange tells Translate how many bytes of each packet, counted from
// the start of the IP header, the dataplane reads (sllbrd's --copy-range,
// the nfqueue copy range). A route with a byte match that ends beyond what
// a packet of one of the route's address families can bring within those
// bytes could never match that family: the route is reported as a Problem
// and left out, instead of silently never matching. Without this option
// (or with n <= 0) byte matches are not checked against a copy range.
func WithCopyRange(n int) Option {
	return func(o *options) { o.copyRange = max(n, 0) }
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

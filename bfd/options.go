package bfd

import "log/slog"

// Event reports a state change of a session.
type Event struct {
	Key Key
	Transition
	// LocalDiscriminator identifies the session instance (a session removed
	// and added again gets a new one).
	LocalDiscriminator uint32
}

// Option configures a Server.
type Option func(*options)

type options struct {
	onEvent        func(Event)
	logger         *slog.Logger
	multihopMinTTL uint8
	listenPorts    [2]uint16 // single hop, multihop
	peerPorts      [2]uint16
}

func defaultOptions() options {
	return options{
		logger:         slog.New(slog.DiscardHandler),
		multihopMinTTL: 1,
		listenPorts:    [2]uint16{PortSingleHop, PortMultihop},
		peerPorts:      [2]uint16{PortSingleHop, PortMultihop},
	}
}

// WithEventHandler sets the function called for every session state change.
// It is called from one goroutine, in order, and must not block for long.
func WithEventHandler(f func(Event)) Option { return func(o *options) { o.onEvent = f } }

// WithLogger sets where socket errors are logged (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMultihopMinTTL sets the smallest TTL / hop limit accepted on multihop
// sessions (RFC 5883 section 2 leaves the check to configuration). Default 1:
// no check. Single-hop sessions always require 255 (RFC 5881 section 5).
func WithMultihopMinTTL(ttl uint8) Option { return func(o *options) { o.multihopMinTTL = ttl } }

// WithListenPorts overrides the UDP ports packets are received on (default
// 3784 single hop, 4784 multihop), for peers using non-standard ports.
func WithListenPorts(singleHop, multihop uint16) Option {
	return func(o *options) { o.listenPorts = [2]uint16{singleHop, multihop} }
}

// WithPeerPorts overrides the UDP destination ports packets are sent to
// (default 3784 single hop, 4784 multihop).
func WithPeerPorts(singleHop, multihop uint16) Option {
	return func(o *options) { o.peerPorts = [2]uint16{singleHop, multihop} }
}

package bgp

import (
	"log/slog"
	"net/netip"
	"time"
)

// Defaults of a Speaker.
const (
	DefaultGlobalASN          = 64512
	DefaultIdleHoldAfterReset = 2 * time.Second
	DefaultConnectRetry       = 3 * time.Second
	DefaultHoldTime           = 90 * time.Second
	resyncInterval            = 2 * time.Second
)

type config struct {
	routerID     netip.Addr
	globalASN    uint32
	listenPort   int32
	logger       *slog.Logger
	idleHold     time.Duration
	connectRetry time.Duration
	waitForBFD   bool
	bindSource   bool
}

func defaultConfig() config {
	return config{
		globalASN:    DefaultGlobalASN,
		listenPort:   -1,
		logger:       slog.Default(),
		idleHold:     DefaultIdleHoldAfterReset,
		connectRetry: DefaultConnectRetry,
	}
}

// Option configures a Speaker.
type Option func(*config)

// WithRouterID sets the BGP identifier (an IPv4 address). Default:
// LocalRouterID().
func WithRouterID(id netip.Addr) Option { return func(c *config) { c.routerID = id } }

// WithGlobalASN sets the speaker's own AS, used for peers whose router has no
// local ASN. Every peer built from a model.Router with LocalASN set uses that
// ASN instead (per-peer local AS). Default DefaultGlobalASN.
func WithGlobalASN(asn uint32) Option { return func(c *config) { c.globalASN = asn } }

// WithListenPort makes GoBGP accept incoming sessions on port (on all
// addresses). Default: no listener, the speaker only dials out.
func WithListenPort(port uint16) Option { return func(c *config) { c.listenPort = int32(port) } }

// WithLogger sets the logger for session state changes and GoBGP's own
// messages (GoBGP info is logged at debug level).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithIdleHoldAfterReset sets how long a peer stays idle after a reset
// (whole seconds, at least 1 s). Default DefaultIdleHoldAfterReset. Longer
// back-off after repeated BFD flaps is the caller's business.
func WithIdleHoldAfterReset(d time.Duration) Option { return func(c *config) { c.idleHold = d } }

// WithConnectRetry sets the interval between connection attempts (whole
// seconds, at least 1 s; GoBGP waits a random time between one and two
// intervals). Default DefaultConnectRetry (GoBGP's own default is 120 s).
func WithConnectRetry(d time.Duration) Option { return func(c *config) { c.connectRetry = d } }

// WithWaitForBFD keeps every peer whose router has BFD enabled disabled
// until PeerUp reports its BFD session up.
func WithWaitForBFD(wait bool) Option { return func(c *config) { c.waitForBFD = wait } }

// wholeSeconds rounds d up to whole seconds, at least min.
func wholeSeconds(d time.Duration, min uint64) uint64 {
	s := uint64((d + time.Second - 1) / time.Second)
	if s < min {
		return min
	}
	return s
}

// WithSourcePortBinding makes each session's outgoing TCP connection use the
// router's LocalPort as source port (GoBGP transport local-port, bound to
// our address on the router's interface). Off by default, because Linux
// then refuses to re-bind that port while the previous connection lingers
// in TIME_WAIT (60 s) after we closed it, e.g. after PeerDown, and two
// routers sharing our address and LocalPort cannot both connect (GoBGP sets
// no SO_REUSEADDR). When off, LocalPort is not used for dialing: outgoing
// connections use an ephemeral port, and we listen only with WithListenPort.
func WithSourcePortBinding(bind bool) Option { return func(c *config) { c.bindSource = bind } }

package admin

import (
	"net/netip"
	"time"
)

// The results of the commands. Their JSON field names are the stable
// interface of `-o json` (docs/operations.md): add fields, never rename or
// remove them. Lists are never null; durations are in seconds; an absent
// optional object is null.

// Routes is `show routes`: the compiled routes in precedence order (the
// first that matches a packet wins).
type Routes struct {
	Generation uint64  `json:"generation"`
	Routes     []Route `json:"routes"`
}

// Route is one compiled L34Route. Empty sources, sourcePorts and
// destinationPorts mean any.
type Route struct {
	Name             string         `json:"name"`
	Priority         int32          `json:"priority"`
	Service          string         `json:"service"`
	ServiceFound     bool           `json:"serviceFound"` // false: the Service does not exist and the traffic is dropped
	Destinations     []netip.Addr   `json:"destinations"`
	Sources          []netip.Prefix `json:"sources"`
	Protocols        []string       `json:"protocols"`
	SourcePorts      []string       `json:"sourcePorts"`
	DestinationPorts []string       `json:"destinationPorts"`
	ByteMatches      []string       `json:"byteMatches"`
	Packets          uint64         `json:"packets"`
	Bytes            uint64         `json:"bytes"`
}

// Services is `show services`: every Service with its endpoints.
type Services struct {
	Generation uint64    `json:"generation"`
	Services   []Service `json:"services"`
}

// Service is one Service's Maglev tables (one per address family) and
// endpoints.
type Service struct {
	Name          string     `json:"name"`
	MaxEndpoints  int        `json:"maxEndpoints"`
	SCTPHashPorts bool       `json:"sctpHashPorts"`
	IPv4          Table      `json:"ipv4"`
	IPv6          Table      `json:"ipv6"`
	Endpoints     []Endpoint `json:"endpoints"`
	// Liveness is how this SLLBR checks the Service's endpoints itself
	// (docs/liveness.md).
	Liveness ServiceLiveness `json:"liveness"`
}

// ServiceLiveness is a Service's endpoint liveness configuration; all
// zero when off.
type ServiceLiveness struct {
	On               bool    `json:"on"`
	Probe            string  `json:"probe,omitempty"` // "icmp" (echo, answered by the target's kernel) or "bfd" (answered by its target side)
	IntervalSeconds  float64 `json:"intervalSeconds"`
	Multiplier       int     `json:"multiplier"`
	DetectionSeconds float64 `json:"detectionSeconds"` // interval × multiplier
	HoldDownSeconds  float64 `json:"holdDownSeconds"`
}

// Table is one family's Maglev table.
type Table struct {
	Size            int `json:"size"`            // M, the entries
	ActiveEndpoints int `json:"activeEndpoints"` // ready endpoints owning entries
}

// Endpoints is `show endpoints`: every endpoint of every Service.
type Endpoints struct {
	Generation uint64     `json:"generation"`
	Endpoints  []Endpoint `json:"endpoints"`
}

// Endpoint is one endpoint identifier (slot) of a Service: one fwmark,
// and an address of each family it has.
type Endpoint struct {
	Service string           `json:"service"`
	ID      int              `json:"id"`
	Mark    uint32           `json:"mark"`
	IPv4    *EndpointAddress `json:"ipv4"`
	IPv6    *EndpointAddress `json:"ipv6"`
}

// EndpointAddress is an endpoint's address of one family.
type EndpointAddress struct {
	Address netip.Addr `json:"address"`
	// Ready: it receives new flows (ready for the API and, when probed,
	// alive for this SLLBR).
	Ready   bool    `json:"ready"`
	Entries int     `json:"entries"` // entries of the family's table it owns
	Share   float64 `json:"share"`   // entries / table size: its expected share of new flows
	Packets uint64  `json:"packets"`
	Bytes   uint64  `json:"bytes"`
	// Liveness is this SLLBR's own check of the address; null when it is
	// not probed (the Service's liveness is off, or the API says not ready).
	Liveness *AddressLiveness `json:"liveness"`
}

// AddressLiveness is what this SLLBR's probes found of an endpoint address.
type AddressLiveness struct {
	Probe        string    `json:"probe"`        // "icmp" or "bfd", as the Service's
	Alive        bool      `json:"alive"`        // false: dead, out of this SLLBR's tables
	Since        time.Time `json:"since"`        // of the last transition, or when probing began
	SinceSeconds float64   `json:"sinceSeconds"` // how long ago Since was
	Transitions  uint64    `json:"transitions"`  // to dead and back, since probing began
	LastReply    time.Time `json:"lastReply"`    // of the last valid echo reply; zero: none yet, or bfd
	RTTSeconds   float64   `json:"rttSeconds"`   // of the last valid echo reply; 0 with bfd
}

// Sessions is `show sessions`: BGP peers and BFD sessions.
type Sessions struct {
	BGP      []BGPPeer    `json:"bgp"`
	BGPError string       `json:"bgpError,omitempty"` // the speaker could not be read completely
	BFD      []BFDSession `json:"bfd"`
}

// BGPPeer is one configured BGP peer.
type BGPPeer struct {
	Router           string     `json:"router"` // the GatewayRouter
	Peer             netip.Addr `json:"peer"`
	State            string     `json:"state"`     // idle, connect, active, opensent, openconfirm, established
	AdminDown        bool       `json:"adminDown"` // held down by BFD
	UptimeSeconds    float64    `json:"uptimeSeconds"`
	PrefixesSent     uint64     `json:"prefixesSent"`
	PrefixesReceived uint64     `json:"prefixesReceived"`
	PrefixesAccepted uint64     `json:"prefixesAccepted"`
	Flaps            uint64     `json:"flaps"`
	LastDownReason   string     `json:"lastDownReason"`
}

// BFDSession is one BFD session, with the timers negotiated with the peer.
type BFDSession struct {
	Peer                 netip.Addr `json:"peer"`
	Interface            string     `json:"interface"`
	Multihop             bool       `json:"multihop"`
	State                string     `json:"state"` // admin_down, down, init, up
	RemoteState          string     `json:"remoteState"`
	TxIntervalSeconds    float64    `json:"txIntervalSeconds"`    // negotiated transmit interval
	RxIntervalSeconds    float64    `json:"rxIntervalSeconds"`    // negotiated receive interval (0: peer not heard)
	DetectionTimeSeconds float64    `json:"detectionTimeSeconds"` // 0: peer not heard
	LocalDiagnostic      string     `json:"localDiagnostic"`      // why it last left up
	RemoteDiagnostic     string     `json:"remoteDiagnostic"`
	UpTransitions        uint64     `json:"upTransitions"`
	DownTransitions      uint64     `json:"downTransitions"`
	SocketError          string     `json:"socketError"`
}

// Fragments is `show fragments`: the fragment table.
type Fragments struct {
	Capacity        int     `json:"capacity"` // entries at most
	Entries         int     `json:"entries"`  // live entries: datagrams remembered or awaited
	Held            int     `json:"held"`     // later fragments parked now
	LifetimeSeconds float64 `json:"lifetimeSeconds"`
	// HoldLimitPerQueue is how many fragments one queue holds at most;
	// more are dropped (reason fragment_hold_limit).
	HoldLimitPerQueue int `json:"holdLimitPerQueue"`
	Queues            int `json:"queues"`
	// Counters since start, as sllbrd_fragments_total{result}.
	Stored    uint64 `json:"stored"`    // first fragments remembered
	Hits      uint64 `json:"hits"`      // later fragments that followed their first
	Misses    uint64 `json:"misses"`    // later fragments neither followed nor held
	HeldTotal uint64 `json:"heldTotal"` // later fragments ever parked
	Released  uint64 `json:"released"`  // parked fragments released by their first
	Expired   uint64 `json:"expired"`   // parked fragments dropped after the lifetime
	Evictions uint64 `json:"evictions"` // live entries pushed out by a full table
}

// Config is `show config`: the configuration applied and where it came from.
type Config struct {
	Gateway string `json:"gateway"`
	Source  Source `json:"source"`
	// Generation is what the packet path decides with; AppliedGeneration
	// the last generation applied without error.
	Generation        uint64    `json:"generation"`
	AppliedGeneration uint64    `json:"appliedGeneration"`
	AppliedAt         time.Time `json:"appliedAt"` // of AppliedGeneration; zero: never
	// LastAttempt is the last apply, successful or not; LastError its
	// error ("" when it succeeded).
	LastAttempt time.Time `json:"lastAttempt"`
	LastError   string    `json:"lastError"`
	Ready       bool      `json:"ready"`
	NotReady    []string  `json:"notReady"` // why not ready
	// Problems lists the parts of the configuration left out.
	Problems []string `json:"problems"`
}

// Source says where the configuration is read from.
type Source struct {
	Kind      string `json:"kind"`                // "file" or "apiserver"
	Path      string `json:"path,omitempty"`      // file
	Server    string `json:"server,omitempty"`    // apiserver: its URL
	Namespace string `json:"namespace,omitempty"` // apiserver
	// Error is why the source's latest content is unusable ("": usable);
	// the last good configuration stays applied meanwhile.
	Error string `json:"error"`
}

// Explanation is `explain`: what the decision does with a synthetic packet.
type Explanation struct {
	Flow       Flow   `json:"flow"`
	Generation uint64 `json:"generation"`
	Decoded    string `json:"decoded"` // how the decoder read the packet: transport, icmp-echo, ...
	Verdict    string `json:"verdict"` // accept, drop
	Reason     string `json:"reason"`  // as sllbrd_packets_total{reason}
	Mark       uint32 `json:"mark"`    // the fwmark given (accept)
	// Route is the route matched (null: none); Misses why each route of
	// the destination above it (all, when none matched) did not match.
	Route  *ExplainedRoute `json:"route"`
	Misses []Miss          `json:"misses"`
	// Lookup is the Maglev lookup (null: the route's Service does not exist).
	Lookup *Lookup `json:"lookup"`
	// Endpoint is the endpoint chosen (null: none ready of the family).
	Endpoint *ExplainedEndpoint `json:"endpoint"`
}

// ExplainedRoute is the route explain matched.
type ExplainedRoute struct {
	Name     string `json:"name"`
	Priority int32  `json:"priority"`
	Service  string `json:"service"`
	Rank     int    `json:"rank"` // position in show routes, 0 first
}

// Miss says why a route did not match: the first check that failed.
type Miss struct {
	Route    string `json:"route"` // "": no single route (e.g. none has the destination)
	Priority int32  `json:"priority"`
	Check    string `json:"check"` // the L34Route field: protocols, destinationPorts, sourceCIDRs, ...
	Detail   string `json:"detail"`
}

// Lookup is the Maglev lookup of explain.
type Lookup struct {
	Family          int    `json:"family"`          // 4 or 6
	Hash            string `json:"hash"`            // the flow hash (32 bits, the kernel path's jhash), 0x and 8 hex digits
	TableSize       int    `json:"tableSize"`       // M
	ActiveEndpoints int    `json:"activeEndpoints"` // ready endpoints of the family
}

// ExplainedEndpoint is the endpoint explain chose.
type ExplainedEndpoint struct {
	ID      int        `json:"id"`
	Address netip.Addr `json:"address"`
	Mark    uint32     `json:"mark"`
	Ready   bool       `json:"ready"`
	Entries int        `json:"entries"`
	Share   float64    `json:"share"`
}

// LogLevel is `log-level`: the level in effect, and the one before when
// it was changed.
type LogLevel struct {
	Level    string `json:"level"`
	Previous string `json:"previous,omitempty"`
}

package bpfpath

import "fmt"

// Status says what the program decided for a packet (bpf/result.h, enum
// status).
type Status uint32

// The statuses, from the C enum through bpf2go's generated constants.
const (
	StatusDecided           = Status(ingressStatusSTATUS_DECIDED)
	StatusPuntNotIP         = Status(ingressStatusSTATUS_PUNT_NOT_IP)
	StatusPuntMalformed     = Status(ingressStatusSTATUS_PUNT_MALFORMED)
	StatusPuntFragment      = Status(ingressStatusSTATUS_PUNT_FRAGMENT)
	StatusPuntIPv6Extension = Status(ingressStatusSTATUS_PUNT_IPV6EXTENSION)
	StatusPuntProtocol      = Status(ingressStatusSTATUS_PUNT_PROTOCOL)
	StatusPuntICMPError     = Status(ingressStatusSTATUS_PUNT_ICMP_ERROR)
	StatusPuntNoTable       = Status(ingressStatusSTATUS_PUNT_NO_TABLE)
	StatusPuntNonlinear     = Status(ingressStatusSTATUS_PUNT_NONLINEAR)
)

var statusNames = map[Status]string{
	StatusDecided:           "decided",
	StatusPuntNotIP:         "punt-not-ip",
	StatusPuntMalformed:     "punt-malformed",
	StatusPuntFragment:      "punt-fragment",
	StatusPuntIPv6Extension: "punt-ipv6-extension",
	StatusPuntProtocol:      "punt-protocol",
	StatusPuntICMPError:     "punt-icmp-error",
	StatusPuntNoTable:       "punt-no-table",
	StatusPuntNonlinear:     "punt-nonlinear",
}

// String returns a short lower-case name, usable as a metric label.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status-%d", uint32(s))
}

// Result is what the program reports for one packet (bpf/result.h).
type Result struct {
	Status Status
	// Hash is the flow hash (flowkey.Hash); set when Status is
	// StatusDecided or StatusPuntNoTable.
	Hash uint32
	// Entry is maglev.ReciprocalScale(Hash, M) and Slot the slot that owns
	// it (maglev.Table.Lookup32); set when Status is StatusDecided.
	Entry, Slot uint32
	// KeyLen is the length of the flow key hashed, in bytes (flowkey.Len).
	KeyLen uint32
}

// skbContext is struct __sk_buff as BPF_PROG_TEST_RUN takes and returns it
// (include/uapi/linux/bpf.h): the program's result is in CB. It is longer
// than the kernel's struct (192 bytes in 6.18), which the kernel accepts
// when the excess is zero, and must be: the kernel refuses to copy out a
// context into a shorter buffer.
type skbContext struct {
	_  [12]uint32 // len .. tc_index
	CB [5]uint32
	_  [47]uint32 // hash .. the end, and spare
}

func (c *skbContext) result() Result {
	return Result{Status: Status(c.CB[0]), Hash: c.CB[1], Entry: c.CB[2], Slot: c.CB[3], KeyLen: c.CB[4]}
}

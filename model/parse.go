package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The parsers below turn the strings of an L34Route (as written in a
// Kubernetes object or a static manifest) into model values. They are shared
// by the Kubernetes translator and the tests of the dataplane. Every error
// quotes the whole input and says what is wrong with it.

// ParsePortRange parses "80", "4000-4010" or "any" (case-insensitive).
// "0-65535" is the same as "any". Spaces around the numbers are tolerated.
func ParsePortRange(s string) (PortRange, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "any") {
		return AnyPort, nil
	}
	from, to, isRange := strings.Cut(t, "-")
	lo, err := parsePort(from)
	if err != nil {
		return PortRange{}, fmt.Errorf("port range %q: %w", s, err)
	}
	if !isRange {
		return PortRange{From: lo, To: lo}, nil
	}
	hi, err := parsePort(to)
	if err != nil {
		return PortRange{}, fmt.Errorf("port range %q: %w", s, err)
	}
	if lo > hi {
		return PortRange{}, fmt.Errorf("port range %q: first port %d is above last port %d", s, lo, hi)
	}
	return PortRange{From: lo, To: hi}, nil
}

func parsePort(s string) (uint16, error) {
	t := strings.TrimSpace(s)
	if t == "" || !isDecimal(t) {
		return 0, fmt.Errorf("%q is not a port number", t)
	}
	v, err := strconv.ParseUint(t, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("%q is not a port number (0-65535)", t)
	}
	return uint16(v), nil
}

// String returns the form ParsePortRange reads: "any", "80" or "4000-4010".
func (r PortRange) String() string {
	switch {
	case r == AnyPort:
		return "any"
	case r.From == r.To:
		return strconv.Itoa(int(r.From))
	}
	return strconv.Itoa(int(r.From)) + "-" + strconv.Itoa(int(r.To))
}

// ParseProtocol parses "TCP", "UDP" or "SCTP" (case-insensitive, spaces
// tolerated): the protocols an L34Route may name.
func ParseProtocol(s string) (Protocol, error) {
	p, ok := transportByName(strings.TrimSpace(s))
	if !ok {
		return 0, fmt.Errorf("protocol %q: must be TCP, UDP or SCTP", s)
	}
	return p, nil
}

func transportByName(s string) (Protocol, bool) {
	switch strings.ToLower(s) {
	case "tcp":
		return ProtoTCP, true
	case "udp":
		return ProtoUDP, true
	case "sctp":
		return ProtoSCTP, true
	}
	return 0, false
}

// ParseByteMatch parses NFQLB's `proto[offset:size] & mask = value` where
// proto is tcp, udp or sctp (case-insensitive), size is 1, 2 or 4, the
// `& mask` part is optional (default: all ones for the size), numbers are
// decimal or 0x-hexadecimal and whitespace between tokens is ignored.
// `proto[offset]` means size 1 (the pcap-filter convention), and "==" is
// accepted for "=". It rejects a mask or value wider than size, a zero mask
// (it would ignore every bit), a value with bits outside the mask, and an
// offset above 65535.
func ParseByteMatch(s string) (ByteMatch, error) {
	m, err := parseByteMatch(&scanner{s: s})
	if err != nil {
		return ByteMatch{}, fmt.Errorf("byte match %q: %w", s, err)
	}
	return m, nil
}

func parseByteMatch(sc *scanner) (ByteMatch, error) {
	var m ByteMatch
	proto, ok := transportByName(sc.word())
	if !ok {
		return m, errors.New("must start with tcp, udp or sctp")
	}
	m.Protocol = proto
	if !sc.eat("[") {
		return m, errors.New("expected '[' after the protocol")
	}
	off, err := sc.number("offset", 0xffff)
	if err != nil {
		return m, err
	}
	m.Offset, m.Size = uint16(off), 1
	if sc.eat(":") {
		size, err := sc.number("size", 4)
		if err != nil {
			return m, err
		}
		if size != 1 && size != 2 && size != 4 {
			return m, fmt.Errorf("size %d: must be 1, 2 or 4", size)
		}
		m.Size = uint8(size)
	}
	if !sc.eat("]") {
		return m, errors.New("expected ']' after the offset and size")
	}
	return parseMaskValue(sc, m)
}

func parseMaskValue(sc *scanner, m ByteMatch) (ByteMatch, error) {
	limit := sizeMask(m.Size)
	m.Mask = limit
	if sc.eat("&") {
		mask, err := sc.number("mask", uint64(limit))
		if err != nil {
			return m, err
		}
		if mask == 0 {
			return m, errors.New("mask 0 would ignore every bit")
		}
		m.Mask = uint32(mask)
	}
	if !sc.eat("==") && !sc.eat("=") {
		return m, errors.New("expected '=' before the value")
	}
	value, err := sc.number("value", uint64(limit))
	if err != nil {
		return m, err
	}
	m.Value = uint32(value)
	if m.Value&^m.Mask != 0 {
		return m, fmt.Errorf("value %#x has bits outside mask %#x", m.Value, m.Mask)
	}
	if !sc.done() {
		return m, fmt.Errorf("unexpected %q after the value", sc.rest())
	}
	return m, nil
}

// sizeMask returns the all-ones mask of a field of size bytes (1, 2 or 4).
func sizeMask(size uint8) uint32 {
	if size >= 4 {
		return 0xffffffff
	}
	return 1<<(8*uint32(size)) - 1
}

// String returns the canonical form that ParseByteMatch reads back, e.g.
// "tcp[13:1] & 0x12 = 0x2".
func (m ByteMatch) String() string {
	var b strings.Builder
	b.WriteString(m.Protocol.String())
	b.WriteByte('[')
	b.WriteString(strconv.Itoa(int(m.Offset)))
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(int(m.Size)))
	b.WriteString("] & 0x")
	b.WriteString(strconv.FormatUint(uint64(m.Mask), 16))
	b.WriteString(" = 0x")
	b.WriteString(strconv.FormatUint(uint64(m.Value), 16))
	return b.String()
}

// scanner walks a byte-match string token by token, skipping whitespace.
type scanner struct {
	s   string
	pos int
}

func (sc *scanner) skipSpace() {
	for sc.pos < len(sc.s) && (sc.s[sc.pos] == ' ' || sc.s[sc.pos] == '\t') {
		sc.pos++
	}
}

// word returns the next run of letters.
func (sc *scanner) word() string {
	sc.skipSpace()
	start := sc.pos
	for sc.pos < len(sc.s) && isLetter(sc.s[sc.pos]) {
		sc.pos++
	}
	return sc.s[start:sc.pos]
}

// eat consumes tok if it comes next.
func (sc *scanner) eat(tok string) bool {
	sc.skipSpace()
	if strings.HasPrefix(sc.s[sc.pos:], tok) {
		sc.pos += len(tok)
		return true
	}
	return false
}

// number reads a decimal or 0x-hexadecimal number no larger than max.
func (sc *scanner) number(what string, max uint64) (uint64, error) {
	sc.skipSpace()
	start := sc.pos
	for sc.pos < len(sc.s) && (isLetter(sc.s[sc.pos]) || isDigit(sc.s[sc.pos])) {
		sc.pos++
	}
	tok := sc.s[start:sc.pos]
	v, ok := parseNumber(tok)
	switch {
	case tok == "":
		return 0, fmt.Errorf("missing %s", what)
	case !ok:
		return 0, fmt.Errorf("%s %q is not a decimal or 0x-hexadecimal number", what, tok)
	case v > max:
		return 0, fmt.Errorf("%s %s is above %d (%#x)", what, tok, max, max)
	}
	return v, nil
}

func (sc *scanner) done() bool   { sc.skipSpace(); return sc.pos == len(sc.s) }
func (sc *scanner) rest() string { return sc.s[sc.pos:] }

// parseNumber accepts decimal digits or 0x/0X followed by hex digits; the
// result saturates above 32 bits so that callers report "too large".
func parseNumber(tok string) (uint64, bool) {
	base, digits := 10, tok
	if len(tok) > 2 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X') {
		base, digits = 16, tok[2:]
	}
	if base == 10 && !isDecimal(digits) {
		return 0, false
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		var numErr *strconv.NumError
		if errors.As(err, &numErr) && errors.Is(numErr.Err, strconv.ErrRange) {
			return 1 << 40, true
		}
		return 0, false
	}
	return v, true
}

func isDecimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

package model

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"unique"
)

// MaxPasswordLength is the longest TCP MD5 key Linux accepts
// (TCP_MD5SIG_MAXKEYLEN).
const MaxPasswordLength = 80

// Password is a secret, such as a BGP session's TCP MD5 key. Printing it
// with fmt (any verb, also inside other values), encoding it (JSON, YAML,
// text) or logging it with log/slog shows "<redacted>" (or "" when it is
// empty), never the secret: only Reveal returns it. The secret is held
// behind a pointer, so that even fmt's fallback for bad verbs, which skips
// String methods, prints an address. Passwords are comparable: two with the
// same secret are equal. The zero value is the empty password.
type Password struct {
	secret unique.Handle[string] // zero: empty
}

const redacted = "<redacted>"

// NewPassword returns the Password holding secret.
func NewPassword(secret string) Password {
	if secret == "" {
		return Password{}
	}
	return Password{secret: unique.Make(secret)}
}

// IsSet reports whether the password is not empty.
func (p Password) IsSet() bool { return p != Password{} }

// Len returns the length of the secret in bytes.
func (p Password) Len() int { return len(p.Reveal()) }

// Reveal returns the secret itself, for the code that hands it to the kernel.
func (p Password) Reveal() string {
	if !p.IsSet() {
		return ""
	}
	return p.secret.Value()
}

// String returns "<redacted>", or "" for an empty password.
func (p Password) String() string {
	if !p.IsSet() {
		return ""
	}
	return redacted
}

// GoString is String, so that %#v does not reveal the password either.
func (p Password) GoString() string { return fmt.Sprintf("model.Password(%q)", p.String()) }

// Format prints String for every verb (GoString for %#v).
func (p Password) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, p.GoString())
		return
	}
	fmt.Fprint(f, p.String())
}

// MarshalText is String: encoders (JSON, YAML) show "<redacted>".
func (p Password) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText accepts only the empty text: a Password is never encoded,
// so decoding one would silently lose it.
func (p *Password) UnmarshalText(b []byte) error {
	if len(b) != 0 {
		return errors.New("a password cannot be decoded (it is never encoded)")
	}
	*p = Password{}
	return nil
}

// LogValue is String, for log/slog.
func (p Password) LogValue() slog.Value { return slog.StringValue(p.String()) }

// Community is a BGP community (RFC 1997): the high 16 bits are usually an
// AS number, the low 16 bits a value of that AS's choosing.
type Community uint32

// String returns the "AS:value" form that ParseCommunity reads.
func (c Community) String() string {
	return strconv.FormatUint(uint64(c>>16), 10) + ":" + strconv.FormatUint(uint64(c&0xffff), 10)
}

// MarshalText is String, so that encoders show the readable form.
func (c Community) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText is ParseCommunity.
func (c *Community) UnmarshalText(b []byte) (err error) {
	*c, err = ParseCommunity(string(b))
	return err
}

// ParseCommunity parses "AS:value", two decimal numbers of 0..65535 each
// (a well-known community too: NO_EXPORT is "65535:65281").
func ParseCommunity(s string) (Community, error) {
	parts, err := decimalParts(s, 2, 16)
	if err != nil {
		return 0, fmt.Errorf("community %q: %w", s, err)
	}
	return Community(parts[0]<<16 | parts[1]), nil
}

// LargeCommunity is a BGP large community (RFC 8092): a global
// administrator (an AS number) and two values of its choosing, 32 bits each.
type LargeCommunity struct {
	Global, Local1, Local2 uint32
}

// String returns the "global:local1:local2" form that ParseLargeCommunity
// reads.
func (c LargeCommunity) String() string {
	return strconv.FormatUint(uint64(c.Global), 10) + ":" + strconv.FormatUint(uint64(c.Local1), 10) +
		":" + strconv.FormatUint(uint64(c.Local2), 10)
}

// MarshalText is String, so that encoders show the readable form.
func (c LargeCommunity) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText is ParseLargeCommunity.
func (c *LargeCommunity) UnmarshalText(b []byte) (err error) {
	*c, err = ParseLargeCommunity(string(b))
	return err
}

// ParseLargeCommunity parses "global:local1:local2", three decimal numbers
// of 0..4294967295 each.
func ParseLargeCommunity(s string) (LargeCommunity, error) {
	parts, err := decimalParts(s, 3, 32)
	if err != nil {
		return LargeCommunity{}, fmt.Errorf("large community %q: %w", s, err)
	}
	return LargeCommunity{Global: uint32(parts[0]), Local1: uint32(parts[1]), Local2: uint32(parts[2])}, nil
}

// decimalParts splits s at colons into n decimal numbers of at most bits
// bits each.
func decimalParts(s string, n, bits int) ([]uint32, error) {
	fields := strings.Split(s, ":")
	if len(fields) != n {
		return nil, fmt.Errorf("want %d numbers separated by colons", n)
	}
	out := make([]uint32, n)
	for i, f := range fields {
		if f == "" || !isDecimal(f) {
			return nil, fmt.Errorf("%q is not a decimal number", f)
		}
		v, err := strconv.ParseUint(f, 10, bits)
		if err != nil {
			return nil, fmt.Errorf("%s is not in 0..%d", f, uint64(1)<<bits-1)
		}
		out[i] = uint32(v)
	}
	return out, nil
}

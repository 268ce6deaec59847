package model

import (
	"strings"
	"testing"
)

func TestParsePortRange(t *testing.T) {
	tests := []struct {
		in      string
		want    PortRange
		wantErr string // substring of the error; "" means success
	}{
		{in: "80", want: PortRange{80, 80}},
		{in: " 80 ", want: PortRange{80, 80}},
		{in: "0", want: PortRange{0, 0}},
		{in: "65535", want: PortRange{65535, 65535}},
		{in: "4000-4010", want: PortRange{4000, 4010}},
		{in: "4000 - 4010", want: PortRange{4000, 4010}},
		{in: "7-7", want: PortRange{7, 7}},
		{in: "any", want: AnyPort},
		{in: "ANY", want: AnyPort},
		{in: "0-65535", want: AnyPort},
		{in: "", wantErr: `port range "": "" is not a port number`},
		{in: "65536", wantErr: "(0-65535)"},
		{in: "-1", wantErr: "is not a port number"},
		{in: "+80", wantErr: `"+80" is not a port number`},
		{in: "80-", wantErr: `"" is not a port number`},
		{in: "4010-4000", wantErr: `port range "4010-4000": first port 4010 is above last port 4000`},
		{in: "1-2-3", wantErr: `"2-3" is not a port number`},
		{in: "0x50", wantErr: "is not a port number"},
		{in: "http", wantErr: `port range "http"`},
	}
	for _, tt := range tests {
		got, err := ParsePortRange(tt.in)
		checkResult(t, "ParsePortRange", tt.in, got, tt.want, err, tt.wantErr)
	}
}

func TestParseProtocol(t *testing.T) {
	tests := []struct {
		in      string
		want    Protocol
		wantErr string
	}{
		{in: "TCP", want: ProtoTCP},
		{in: "tcp", want: ProtoTCP},
		{in: "Udp", want: ProtoUDP},
		{in: " SCTP ", want: ProtoSCTP},
		{in: "ICMP", wantErr: `protocol "ICMP": must be TCP, UDP or SCTP`},
		{in: "", wantErr: `protocol ""`},
		{in: "6", wantErr: `protocol "6"`},
	}
	for _, tt := range tests {
		got, err := ParseProtocol(tt.in)
		checkResult(t, "ParseProtocol", tt.in, got, tt.want, err, tt.wantErr)
	}
}

func TestParseByteMatch(t *testing.T) {
	tests := []struct {
		in      string
		want    ByteMatch
		wantErr string
	}{
		{in: "tcp[13:1] & 0x12 = 0x2", want: ByteMatch{ProtoTCP, 13, 1, 0x12, 2}},
		{in: "tcp[13:1]&0x12=2", want: ByteMatch{ProtoTCP, 13, 1, 0x12, 2}},
		{in: "  udp [ 8 : 2 ] & 0xff00 == 0x1200  ", want: ByteMatch{ProtoUDP, 8, 2, 0xff00, 0x1200}},
		{in: "sctp[12:4] = 0xdeadbeef", want: ByteMatch{ProtoSCTP, 12, 4, 0xffffffff, 0xdeadbeef}},
		{in: "SCTP[0x0c:4]=3735928559", want: ByteMatch{ProtoSCTP, 12, 4, 0xffffffff, 0xdeadbeef}},
		{in: "udp[8] = 255", want: ByteMatch{ProtoUDP, 8, 1, 0xff, 0xff}},
		{in: "tcp[65535:2]=0", want: ByteMatch{ProtoTCP, 65535, 2, 0xffff, 0}},
		{in: "tcp[0:2] & 0xFFFF = 0X50", want: ByteMatch{ProtoTCP, 0, 2, 0xffff, 0x50}},
		{in: "icmp[0:1]=8", wantErr: "must start with tcp, udp or sctp"},
		{in: "tcp 0:1]=8", wantErr: "expected '['"},
		{in: "tcp[0:3]=1", wantErr: "size 3: must be 1, 2 or 4"},
		{in: "tcp[0:8]=1", wantErr: "size 8 is above 4"},
		{in: "tcp[65536:1]=1", wantErr: "offset 65536 is above 65535"},
		{in: "tcp[99999999999999999999:1]=1", wantErr: "offset 99999999999999999999 is above"},
		{in: "tcp[0:1=1", wantErr: "expected ']'"},
		{in: "tcp[:1]=1", wantErr: "missing offset"},
		{in: "tcp[0:1]=256", wantErr: "value 256 is above 255"},
		{in: "tcp[0:2]&0x10000=1", wantErr: "mask 0x10000 is above 65535"},
		{in: "tcp[0:4]=0x100000000", wantErr: "value 0x100000000 is above 4294967295"},
		{in: "tcp[0:1]&0x0f=0x10", wantErr: "value 0x10 has bits outside mask 0xf"},
		{in: "tcp[0:1]&0=0", wantErr: "mask 0 would ignore every bit"},
		{in: "tcp[0:1]&0xf", wantErr: "expected '=' before the value"},
		{in: "tcp[0:1]=", wantErr: "missing value"},
		{in: "tcp[0:1]=1 garbage", wantErr: `unexpected "garbage" after the value`},
		{in: "tcp[0:1]=1g", wantErr: `value "1g" is not a decimal`},
		{in: "tcp[0:1]=0x", wantErr: `value "0x" is not a decimal`},
		{in: "tcp[0:1]=0o7", wantErr: `value "0o7" is not a decimal`},
		{in: "tcp[0:1]=-1", wantErr: "missing value"},
		{in: "tcp[0:1]=0x_f", wantErr: "not a decimal"},
		{in: "", wantErr: `byte match "": must start with`},
	}
	for _, tt := range tests {
		got, err := ParseByteMatch(tt.in)
		checkResult(t, "ParseByteMatch", tt.in, got, tt.want, err, tt.wantErr)
		if err != nil && !strings.Contains(err.Error(), `"`+tt.in+`"`) {
			t.Errorf("ParseByteMatch(%q) error %q does not quote the input", tt.in, err)
		}
	}
}

func checkResult[T comparable](t *testing.T, fn, in string, got, want T, err error, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s(%q) error = %v, want containing %q", fn, in, err, wantErr)
		}
		return
	}
	if err != nil {
		t.Errorf("%s(%q) unexpected error %v", fn, in, err)
		return
	}
	if got != want {
		t.Errorf("%s(%q) = %+v, want %+v", fn, in, got, want)
	}
}

func TestStringRoundTrip(t *testing.T) {
	ranges := []PortRange{{80, 80}, {0, 0}, {4000, 4010}, AnyPort, {0, 65534}}
	for _, r := range ranges {
		got, err := ParsePortRange(r.String())
		if err != nil || got != r {
			t.Errorf("ParsePortRange(%q) = %v, %v; want %v", r.String(), got, err, r)
		}
	}
	matches := []ByteMatch{
		{ProtoTCP, 13, 1, 0x12, 2},
		{ProtoUDP, 65535, 4, 0xffffffff, 0},
		{ProtoSCTP, 0, 2, 0x8000, 0x8000},
	}
	for _, m := range matches {
		got, err := ParseByteMatch(m.String())
		if err != nil || got != m {
			t.Errorf("ParseByteMatch(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
}

func FuzzParseByteMatch(f *testing.F) {
	for _, s := range []string{"tcp[13:1] & 0x12 = 0x2", "udp[8]=1", "sctp[0:4]==0xffffffff", "tcp[0:2]&0x0=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseByteMatch(s)
		if err != nil {
			return
		}
		if m.Size != 1 && m.Size != 2 && m.Size != 4 {
			t.Fatalf("ParseByteMatch(%q) size %d", s, m.Size)
		}
		if m.Mask == 0 || m.Mask&^sizeMask(m.Size) != 0 || m.Value&^m.Mask != 0 {
			t.Fatalf("ParseByteMatch(%q) = %+v breaks the mask invariants", s, m)
		}
		back, err := ParseByteMatch(m.String())
		if err != nil || back != m {
			t.Fatalf("round trip of %q via %q = %+v, %v", s, m.String(), back, err)
		}
	})
}

func FuzzParsePortRange(f *testing.F) {
	for _, s := range []string{"80", "1-2", "any", "0-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParsePortRange(s)
		if err != nil {
			return
		}
		if r.From > r.To {
			t.Fatalf("ParsePortRange(%q) = %v: From > To", s, r)
		}
		back, err := ParsePortRange(r.String())
		if err != nil || back != r {
			t.Fatalf("round trip of %q via %q = %v, %v", s, r.String(), back, err)
		}
	})
}

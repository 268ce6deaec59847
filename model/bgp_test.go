package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestPasswordNeverPrinted: every way of printing, encoding or logging a
// Password, alone or inside a Router, shows "<redacted>", never the secret.
func TestPasswordNeverPrinted(t *testing.T) {
	const secret = "s3cr3t-md5-key"
	r := Router{Name: "default/gw", BGP: &BGP{RemoteASN: 1, Password: NewPassword(secret)}}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s"} {
		out = append(out, fmt.Sprintf(verb, r.BGP.Password), fmt.Sprintf(verb, *r.BGP), fmt.Sprintf(verb, r))
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, string(js))
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("router", "password", r.BGP.Password, "bgp", r.BGP)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("router", "password", r.BGP.Password, "bgp", *r.BGP)
	out = append(out, logged.String())
	for _, o := range out {
		if strings.Contains(o, secret) || strings.Contains(o, fmt.Sprintf("%x", secret)) {
			t.Errorf("the password is visible in %q", o)
		}
	}
	if !strings.Contains(string(js), `"Password":"\u003credacted\u003e"`) {
		t.Errorf("JSON %s does not show the password as <redacted>", js)
	}
	if got := r.BGP.Password.Reveal(); got != secret {
		t.Errorf("Reveal() = %q, want the secret", got)
	}
	if got := NewPassword("").String(); got != "" || NewPassword("") != (Password{}) {
		t.Errorf("an empty password prints %q, want nothing, and is not the zero Password", got)
	}
	if NewPassword(secret) != r.BGP.Password || NewPassword("other") == r.BGP.Password {
		t.Error("passwords with the same secret must be equal, others not")
	}
}

func TestParseCommunity(t *testing.T) {
	tests := []struct {
		in      string
		want    Community
		wantErr string
	}{
		{in: "65000:100", want: 65000<<16 | 100},
		{in: "0:0", want: 0},
		{in: "65535:65281", want: 0xffffff01},
		{in: "65536:1", wantErr: `community "65536:1": 65536 is not in 0..65535`},
		{in: "1:65536", wantErr: "65536 is not in 0..65535"},
		{in: "1", wantErr: "want 2 numbers separated by colons"},
		{in: "1:2:3", wantErr: "want 2 numbers"},
		{in: "a:1", wantErr: `"a" is not a decimal number`},
		{in: ":1", wantErr: `"" is not a decimal number`},
		{in: "-1:1", wantErr: "is not a decimal number"},
		{in: " 1:1", wantErr: "is not a decimal number"},
	}
	for _, tt := range tests {
		got, err := ParseCommunity(tt.in)
		checkResult(t, "ParseCommunity", tt.in, got, tt.want, err, tt.wantErr)
		if err == nil && got.String() != tt.in {
			t.Errorf("ParseCommunity(%q).String() = %q", tt.in, got)
		}
	}
}

func TestParseLargeCommunity(t *testing.T) {
	tests := []struct {
		in      string
		want    LargeCommunity
		wantErr string
	}{
		{in: "4248829953:1:2", want: LargeCommunity{4248829953, 1, 2}},
		{in: "0:0:0"},
		{in: "4294967295:4294967295:4294967295", want: LargeCommunity{1<<32 - 1, 1<<32 - 1, 1<<32 - 1}},
		{in: "4294967296:0:0", wantErr: `large community "4294967296:0:0": 4294967296 is not in 0..4294967295`},
		{in: "1:2", wantErr: "want 3 numbers separated by colons"},
		{in: "1:2:x", wantErr: `"x" is not a decimal number`},
	}
	for _, tt := range tests {
		got, err := ParseLargeCommunity(tt.in)
		checkResult(t, "ParseLargeCommunity", tt.in, got, tt.want, err, tt.wantErr)
		if err == nil && got.String() != tt.in {
			t.Errorf("ParseLargeCommunity(%q).String() = %q", tt.in, got)
		}
	}
}

// TestBGPJSONRoundTrip: communities survive JSON; a password does not
// pretend to (decoding its redacted form is an error, not an empty key).
func TestBGPJSONRoundTrip(t *testing.T) {
	lp := uint32(200)
	in := BGP{RemoteASN: 1, Communities: []Community{65001<<16 | 100}, LargeCommunities: []LargeCommunity{{1, 2, 3}}, LocalPreference: &lp}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out BGP
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	if out.Communities[0] != in.Communities[0] || out.LargeCommunities[0] != in.LargeCommunities[0] || *out.LocalPreference != lp {
		t.Errorf("round trip of %s = %+v", js, out)
	}
	in.Password = NewPassword("secret")
	js, _ = json.Marshal(in)
	if err := json.Unmarshal(js, &out); err == nil {
		t.Errorf("decoding %s succeeded; a redacted password must not decode", js)
	}
}

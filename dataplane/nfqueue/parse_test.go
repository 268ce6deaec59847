package nfqueue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

func TestParsePacket(t *testing.T) {
	payload := []byte{0x45, 0, 0, 28, 1, 2, 3, 4, 5}
	full := nlMessage(typePacket, 5,
		testAttr{attrPacketHdr, pktHdr(42, 0x86dd, 1)},
		testAttr{attrMark, be32(7)},
		testAttr{attrIfindexIn, be32(3)},
		testAttr{attrIfindexOut, be32(4)},
		testAttr{attrSkbInfo, be32(SkbGSO)},
		testAttr{attrCapLen, be32(1500)},
		testAttr{99 | 0x8000, []byte{1, 2, 3}}, // unknown, nested flag: ignored
		testAttr{attrPayload, payload})
	shortHdrAttr := nlMessage(typePacket, 0, testAttr{attrPacketHdr, []byte{0, 0, 0, 1}})
	shortMark := nlMessage(typePacket, 0,
		testAttr{attrPacketHdr, pktHdr(9, 0x800, 0)}, testAttr{attrMark, []byte{1}})
	badAttrLen := append([]byte(nil), packetMsg(11, 0, payload)...)
	binary.NativeEndian.PutUint16(badAttrLen[20+12:], 200) // the mark attribute
	tinyAttrLen := append([]byte(nil), badAttrLen...)
	binary.NativeEndian.PutUint16(tinyAttrLen[20+12:], 2)

	tests := []struct {
		name    string
		msg     []byte
		want    Packet
		wantID  bool
		wantErr error
	}{
		{"all attributes", full, Packet{ID: 42, HwProtocol: 0x86dd, Hook: 1, Mark: 7,
			InIfindex: 3, OutIfindex: 4, SkbInfo: SkbGSO, Payload: payload, Length: 1500}, true, nil},
		{"no cap len", packetMsg(1, 2, payload), Packet{ID: 1, HwProtocol: 0x800, Mark: 2,
			InIfindex: 3, Payload: payload, Length: len(payload)}, true, nil},
		{"no payload", nlMessage(typePacket, 0, testAttr{attrPacketHdr, pktHdr(3, 0x800, 0)}),
			Packet{ID: 3, HwProtocol: 0x800}, true, nil},
		{"no packet header", nlMessage(typePacket, 0, testAttr{attrMark, be32(1)}),
			Packet{Mark: 1}, false, errNoPacketHdr},
		{"packet header too short", shortHdrAttr, Packet{}, false, errBadAttr},
		{"mark too short after header", shortMark,
			Packet{ID: 9, HwProtocol: 0x800}, true, errBadAttr},
		{"attribute longer than message", badAttrLen,
			Packet{ID: 11, HwProtocol: 0x800}, true, errBadAttr},
		{"attribute shorter than its header", tinyAttrLen,
			Packet{ID: 11, HwProtocol: 0x800}, true, errBadAttr},
		{"cut in the payload", packetMsg(12, 0, payload)[:54],
			Packet{ID: 12, HwProtocol: 0x800, InIfindex: 3}, true, errBadAttr},
		{"no nfgenmsg", packetMsg(1, 0, nil)[:18], Packet{}, false, errShortMessage},
		{"empty", nil, Packet{}, false, errShortMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Packet
			p.Payload = []byte("stale") // parsePacket must reset every field
			hasID, err := parsePacket(tt.msg, &p)
			if !errors.Is(err, tt.wantErr) || hasID != tt.wantID {
				t.Fatalf("parsePacket = %v, %v; want %v, %v", hasID, err, tt.wantID, tt.wantErr)
			}
			if err == nil && !equalPacket(p, tt.want) {
				t.Errorf("packet = %+v\nwant     %+v", p, tt.want)
			}
			if err != nil && tt.wantID && p.ID != tt.want.ID {
				t.Errorf("id = %d, want %d", p.ID, tt.want.ID)
			}
		})
	}
}

func equalPacket(a, b Packet) bool {
	pa, pb := a.Payload, b.Payload
	a.Payload, b.Payload = nil, nil
	return reflect.DeepEqual(a, b) && bytes.Equal(pa, pb)
}

func TestSplitMessage(t *testing.T) {
	m1 := packetMsg(1, 0, []byte{1, 2, 3}) // 3-byte payload: padded
	m2 := errorMsg(0, 5)
	unpadded := m1[:len(m1)-1] // last message may lack its padding
	binary.NativeEndian.PutUint32(unpadded, uint32(len(unpadded)))
	tooLong := append([]byte(nil), m2...)
	binary.NativeEndian.PutUint32(tooLong, 400)
	tooShort := append([]byte(nil), m2...)
	binary.NativeEndian.PutUint32(tooShort, 8)

	tests := []struct {
		name     string
		in       []byte
		wantLens []int // lengths of the messages cut off, in order
		wantErr  error // error of the last split
	}{
		{"two messages", append(append([]byte(nil), m1...), m2...), []int{len(m1) - 1, len(m2)}, nil},
		{"unpadded last", unpadded, []int{len(unpadded)}, nil},
		{"length beyond buffer", tooLong, []int{len(tooLong)}, errBadLength},
		{"length below header", tooShort, nil, errBadLength},
		{"short buffer", m2[:10], nil, errShortMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lens []int
			var err error
			for b := tt.in; len(b) > 0; {
				var msg []byte
				_, msg, b, err = splitMessage(b)
				if msg != nil {
					lens = append(lens, len(msg))
				}
				if err != nil {
					break
				}
			}
			if !errors.Is(err, tt.wantErr) || !equalInts(lens, tt.wantLens) {
				t.Errorf("lens %v err %v; want %v %v", lens, err, tt.wantLens, tt.wantErr)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

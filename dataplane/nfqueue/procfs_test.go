package nfqueue

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProcStats(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []KernelQueueStats
		wantErr bool
	}{
		{"negative port id", "    0 1234567     0 2   256     5     2      100  1\n" +
			"    7   -4021     3 2 65531     0     0 4294967295  1\n", nil, true},
		{"kernel format", "    0 3213213     0 2   256     5     2      100  1\n" +
			"    7  421321    13 1 65531     0     9 4294967295  1\n",
			[]KernelQueueStats{
				{Queue: 0, PortID: 3213213, CopyMode: 2, CopyRange: 256, QueueDropped: 5, UserDropped: 2, IDSequence: 100},
				{Queue: 7, PortID: 421321, Waiting: 13, CopyMode: 1, CopyRange: 65531, UserDropped: 9, IDSequence: 4294967295},
			}, false},
		{"empty", "", nil, false},
		{"blank lines", "\n\n", nil, false},
		{"too few fields", "0 1 2 3 4 5 6\n", nil, true},
		{"not a number", "0 1 2 x 4 5 6 7 1\n", nil, true},
		{"queue number too large", "70000 1 2 2 4 5 6 7 1\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProcStats(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestFindQueue(t *testing.T) {
	all := []KernelQueueStats{{Queue: 1, PortID: 10}, {Queue: 4, PortID: 40}}
	if s, ok := FindQueue(all, 4); !ok || s.PortID != 40 {
		t.Errorf("FindQueue(4) = %+v, %v", s, ok)
	}
	if _, ok := FindQueue(all, 2); ok {
		t.Error("FindQueue(2) found a queue that is not there")
	}
}

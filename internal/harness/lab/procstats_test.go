package lab

import (
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name        string
		stat        string
		user, syst  time.Duration
		majorFaults uint64
		wantErr     bool
	}{
		{name: "plain", stat: "42 (sllbrd) S 1 42 42 0 -1 4194560 100 0 17 0 250 75 0 0 20 0 8 0 1000 0 0",
			user: 2500 * time.Millisecond, syst: 750 * time.Millisecond, majorFaults: 17},
		{name: "name with spaces and parens", stat: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5",
			user: 30 * time.Millisecond, syst: 40 * time.Millisecond},
		{name: "truncated", stat: "7 (x) R 1 2 3", wantErr: true},
		{name: "no name", stat: "garbage", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, s, mf, err := parseStat([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if u != tt.user || s != tt.syst || mf != tt.majorFaults {
				t.Errorf("got %v/%v/%d, want %v/%v/%d", u, s, mf, tt.user, tt.syst, tt.majorFaults)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	rss, th, err := parseStatus([]byte("Name:\tx\nVmRSS:\t    2304 kB\nThreads:\t5\n"))
	if err != nil || rss != 2304*1024 || th != 5 {
		t.Errorf("got %d, %d, %v; want %d, 5, nil", rss, th, err, 2304*1024)
	}
	if got := statusKB([]byte("VmRSS:\t 9 kB\nRssAnon:\t    2300 kB\n"), "RssAnon"); got != 2300*1024 {
		t.Errorf("RssAnon %d", got)
	}
	if got := statusKB([]byte("VmRSS:\t 9 kB\n"), "RssAnon"); got != 0 {
		t.Errorf("absent RssAnon %d", got)
	}
	if _, _, err := parseStatus([]byte("Name:\tzombie\nThreads:\t1\n")); err == nil {
		t.Error("status without VmRSS parsed")
	}
}

func TestReadProcStatsSelf(t *testing.T) {
	deadline := time.Now().Add(30 * time.Millisecond)
	for time.Now().Before(deadline) { // burn a little CPU so utime can tick
	}
	s, err := ReadProcStats(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS < 1<<20 || s.Threads < 1 || s.RSSAnon == 0 || s.RSSAnon > s.RSS {
		t.Errorf("implausible stats of self: %+v", s)
	}
	if _, err := ReadProcStats(0x7ffffff0); err == nil {
		t.Error("stats of a non-existent pid succeeded")
	}
}

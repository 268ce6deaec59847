package lab

import (
	"os"
	"testing"
)

func TestParseKB(t *testing.T) {
	var rss, pss, anon uint64
	text := "Name:\tsllbrd\nVmRSS:\t   18432 kB\nRssAnon:\t 9000 kB\nThreads:\t9\n"
	if err := parseKB(text, map[string]*uint64{"VmRSS": &rss, "RssAnon": &anon, "Pss": &pss}); err != nil {
		t.Fatal(err)
	}
	if rss != 18432*1024 || anon != 9000*1024 || pss != 0 {
		t.Errorf("rss %d anon %d pss %d", rss, anon, pss)
	}
	if err := parseKB("VmRSS:\t12 MB\n", map[string]*uint64{"VmRSS": &rss}); err == nil {
		t.Error("a size not in kB was accepted")
	}
}

func TestReadMemStatsSelf(t *testing.T) {
	m, err := ReadMemStats(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS == 0 || m.Anon+m.File+m.Shmem != m.RSS || m.HWM < m.RSS {
		t.Errorf("inconsistent %+v: want RSS = anon + file + shmem <= HWM", m)
	}
}

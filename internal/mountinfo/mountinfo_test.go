package mountinfo

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	table := "22 1 0:21 / /proc rw,nosuid - proc proc rw\n" +
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n" +
		"97 25 0:49 /kubepods/pod1 /var/lib/my\\040dir rw,relatime shared:5 master:1 - cgroup2 cgroup2 rw\n" +
		"not a mount line\n" +
		"1 2 3 4 5 - \n" // no file system type
	want := []Mount{
		{Root: "/", Point: "/proc", FSType: "proc"},
		{Root: "/", Point: "/sys/fs/cgroup/unified", FSType: "cgroup2"},
		{Root: "/kubepods/pod1", Point: "/var/lib/my dir", FSType: "cgroup2"},
	}
	if got := Parse([]byte(table)); !slices.Equal(got, want) {
		t.Errorf("Parse = %+v, want %+v", got, want)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/a`:          `/var/lib/a`,
		`/var/lib/a\040b`:     `/var/lib/a b`,
		`/x\011y\134z`:        "/x\ty\\z",
		`/trailing\04`:        `/trailing\04`,
		`/not\999octal\040ok`: `/not\999octal ok`,
		`/end\040`:            `/end `,
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

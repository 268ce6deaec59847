package mountinfo

import (
	"slices"
	"strconv"
	"strings"
)

// Mount is one line of a mount table.
type Mount struct {
	Root   string // the directory of the file system mounted (a bind mount's source)
	Point  string // where it is mounted
	FSType string
}

// Parse returns the mounts of a mountinfo table, in its order.
func Parse(table []byte) []Mount {
	var out []Mount
	for line := range strings.Lines(string(table)) {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 5 || sep+1 >= len(f) {
			continue
		}
		out = append(out, Mount{Root: unescape(f[3]), Point: unescape(f[4]), FSType: f[sep+1]})
	}
	return out
}

// unescape undoes the octal escapes of a mountinfo path.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

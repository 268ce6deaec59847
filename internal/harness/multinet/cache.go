package multinet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// cacheEntry is what one ADD delegated for a container and the runtime's
// interface: DEL and CHECK work from it alone, without the API server.
type cacheEntry struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifName"`
	Pod         string `json:"pod,omitempty"`
	// Delegates in the order ADD ran them, the default network first. ADD
	// records each before running it, so a DEL after an interrupted ADD
	// still undoes it.
	Delegates []delegate `json:"delegates"`
}

// cache is the directory of cache entries, one file per container and
// interface.
type cache string

// path is the entry's file; containerID and ifname are validated (no '/').
func (c cache) path(containerID, ifname string) string {
	return filepath.Join(string(c), containerID+"-"+ifname+".json")
}

// load returns the entry of containerID and ifname; found is false when
// there is none.
func (c cache) load(containerID, ifname string) (entry cacheEntry, found bool, err error) {
	p := c.path(containerID, ifname)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return cacheEntry{}, false, nil
	}
	if err != nil {
		return cacheEntry{}, false, withCode(CodeIOFailure, fmt.Errorf("cache: %w", err))
	}
	if err := json.Unmarshal(data, &entry); err != nil {
		return cacheEntry{}, false, withCode(CodeDecodingFailure, fmt.Errorf("cache %s: %w", p, err))
	}
	if entry.ContainerID != containerID || entry.IfName != ifname {
		return cacheEntry{}, false, withCode(CodeDecodingFailure,
			fmt.Errorf("cache %s holds container %q interface %q", p, entry.ContainerID, entry.IfName))
	}
	return entry, true, nil
}

// save writes the entry atomically (a temporary file renamed over it).
func (c cache) save(entry cacheEntry) error {
	data, err := json.Marshal(entry)
	if err != nil {
		return withCode(CodeIOFailure, fmt.Errorf("cache: %w", err))
	}
	if err := os.MkdirAll(string(c), 0o700); err != nil {
		return withCode(CodeIOFailure, fmt.Errorf("cache: %w", err))
	}
	p := c.path(entry.ContainerID, entry.IfName)
	tmp, err := os.CreateTemp(string(c), ".tmp-*")
	if err != nil {
		return withCode(CodeIOFailure, fmt.Errorf("cache: %w", err))
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return withCode(CodeIOFailure, fmt.Errorf("cache %s: %w", p, err))
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return withCode(CodeIOFailure, fmt.Errorf("cache: %w", err))
	}
	return nil
}

// remove deletes the entry; a missing entry is not an error.
func (c cache) remove(containerID, ifname string) error {
	err := os.Remove(c.path(containerID, ifname))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return withCode(CodeIOFailure, fmt.Errorf("cache: %w", err))
	}
	return nil
}

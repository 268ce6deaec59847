package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
)

// DefaultSocket is where sllbrd creates its admin socket by default.
const DefaultSocket = "/run/sllbrd/admin.sock"

// Call sends req to the admin socket at path and decodes its result into
// out. ctx bounds the whole exchange.
func Call(ctx context.Context, path string, req Request, out any) error {
	if err := req.Validate(); err != nil {
		return err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return fmt.Errorf("admin socket %s: %w (is sllbrd running with this --admin-socket, and are you root or in its group?)", path, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	// A server that refuses the connection answers and closes before
	// reading: the write may then fail, and its answer still be there.
	werr := json.NewEncoder(c).Encode(req)
	var resp Response
	if err := json.NewDecoder(io.LimitReader(c, MaxResponseBytes)).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if werr != nil {
			return fmt.Errorf("admin socket %s: sending the request: %w", path, werr)
		}
		return fmt.Errorf("admin socket %s: reading the response: %w", path, err)
	}
	if resp.Error != "" {
		return &RemoteError{Message: resp.Error}
	}
	if len(resp.Result) == 0 {
		return errors.New("admin socket: empty response")
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("admin socket %s: decoding the result: %w", path, err)
	}
	return nil
}

// RemoteError is an error sllbrd answered.
type RemoteError struct{ Message string }

func (e *RemoteError) Error() string { return "sllbrd: " + e.Message }

package multinet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// delegate is one network multinet attaches to a pod, as its cache keeps
// it: the default network or a NetworkAttachmentDefinition.
type delegate struct {
	// Name is the network's name in network-status.
	Name    string  `json:"name"`
	IfName  string  `json:"ifName"`
	Default bool    `json:"default,omitempty"`
	Conf    NetConf `json:"conf"`
	// Result is the last plugin's result, once ADD succeeded.
	Result json.RawMessage `json:"result,omitempty"`
}

// add runs ADD on each plugin in order, each with the previous one's
// result, and returns the last result.
func (d delegate) add(ctx context.Context, e cniEnv) (json.RawMessage, error) {
	var prev json.RawMessage
	for i := range d.Conf.Plugins {
		out, err := d.run(ctx, e, cmdAdd, i, prev)
		if err != nil {
			return nil, err
		}
		if _, err := ParseResult(out, d.Conf.CNIVersion); err != nil {
			return nil, withCode(CodeDelegateFailed, d.errorf("plugin %s: %w", d.Conf.pluginType(i), err))
		}
		prev = bytes.TrimSpace(out)
	}
	return prev, nil
}

// del runs DEL on each plugin in reverse order with the cached result (if
// any), and returns the first error after trying them all.
func (d delegate) del(ctx context.Context, e cniEnv) error {
	var first error
	for i := len(d.Conf.Plugins) - 1; i >= 0; i-- {
		if _, err := d.run(ctx, e, cmdDel, i, d.Result); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// check runs CHECK on each plugin in order with the cached result, unless
// the configuration disables it.
func (d delegate) check(ctx context.Context, e cniEnv) error {
	if d.Conf.DisableCheck {
		return nil
	}
	if d.Result == nil {
		return withCode(CodeUnknownContainer, d.errorf("no result of a complete ADD to check against"))
	}
	for i := range d.Conf.Plugins {
		if _, err := d.run(ctx, e, cmdCheck, i, d.Result); err != nil {
			return err
		}
	}
	return nil
}

// run executes plugin i of the delegate with command; errors name the
// network and its interface.
func (d delegate) run(ctx context.Context, e cniEnv, command string, i int, prevResult json.RawMessage) ([]byte, error) {
	stdin, err := d.Conf.pluginStdin(i, prevResult)
	if err != nil {
		return nil, d.errorf("%w", err)
	}
	out, err := execPlugin(ctx, d.Conf.pluginType(i), e.Path, e.delegateEnv(command, d.IfName), stdin)
	if err != nil {
		return nil, withCode(CodeDelegateFailed, d.errorf("%s: %w", command, err))
	}
	return out, nil
}

// errorf prefixes an error with the delegate's network and interface.
func (d delegate) errorf(format string, args ...any) error {
	return fmt.Errorf("network %s on %s: "+format, append([]any{d.Name, d.IfName}, args...)...)
}

package multinet

import (
	"context"
	"errors"
)

// del deletes what the cached ADD delegated, in reverse order; without a
// cache entry it deletes the default network on the runtime's interface
// only. It needs neither the pod nor the NetworkAttachmentDefinitions.
func (inv *invocation) del(ctx context.Context) error {
	e := inv.env
	entry, found, err := inv.cached()
	if err != nil {
		return err
	}
	if !found {
		inv.log.printf("no cached ADD: deleting the default network %s on %s only", inv.defNet.Name, e.IfName)
		d := delegate{Name: inv.defNet.Name, IfName: e.IfName, Default: true, Conf: inv.defNet}
		return d.del(ctx, e)
	}
	return inv.delAll(ctx, entry)
}

// delAll deletes every delegate of entry in reverse order, trying all, and
// removes the entry when all succeeded.
func (inv *invocation) delAll(ctx context.Context, entry cacheEntry) error {
	var errs []error
	for i := len(entry.Delegates) - 1; i >= 0; i-- {
		d := entry.Delegates[i]
		if err := d.del(ctx, inv.env); err != nil {
			inv.log.printf("deleting network %s on %s failed: %v", d.Name, d.IfName, err)
			errs = append(errs, err)
			continue
		}
		inv.log.printf("deleted network %s on %s", d.Name, d.IfName)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return inv.cache.remove(entry.ContainerID, entry.IfName)
}

// check runs CHECK on every cached delegate in ADD's order.
func (inv *invocation) check(ctx context.Context) error {
	e := inv.env
	entry, found, err := inv.cached()
	if err != nil {
		return err
	}
	if !found {
		return codef(CodeUnknownContainer, "no ADD of container %s on %s to check", e.ContainerID, e.IfName)
	}
	for _, d := range entry.Delegates {
		if err := d.check(ctx, e); err != nil {
			return err
		}
		inv.log.printf("checked network %s on %s", d.Name, d.IfName)
	}
	return nil
}

// cached returns the cache entry of the command's container and interface.
func (inv *invocation) cached() (cacheEntry, bool, error) {
	return inv.cache.load(inv.env.ContainerID, inv.env.IfName)
}

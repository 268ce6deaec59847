package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/dataplane"
)

// interfaceGroups are the rtnetlink groups whose notifications ask for an
// apply: an interface created, deleted, up or down, or an address added or
// removed, takes with it, or makes possible again, the policy routes and
// the routers' configuration an apply programs.
const interfaceGroups = 1<<(unix.RTNLGRP_LINK-1) | 1<<(unix.RTNLGRP_IPV4_IFADDR-1) | 1<<(unix.RTNLGRP_IPV6_IFADDR-1)

// watchInterfaces asks the reconcile loop for an apply (Resync) at every
// change of the namespace's interfaces and addresses, until ctx ends. An
// interface created again (a secondary network attached again, with its
// addresses) gets the policy routes the kernel deleted with the old one at
// once, not at the next periodic resync. The loop spaces the applies, so a
// burst of notifications costs one or two.
func (d *daemon) watchInterfaces(ctx context.Context) error {
	changed := make(chan struct{}, 1)
	go dataplane.WatchNetlink(ctx, interfaceGroups, changed, func() { d.interfaceWatchFailures.Add(1) })
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			d.loop.Resync()
		}
	}
}

// interfaceWatchCollector exports the interface watch's failures.
func (d *daemon) interfaceWatchCollector() prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sllbrd_interface_watch_failures_total",
		Help: "Failed dials or receives of the interface and address notifications that trigger an apply (each one triggers an apply too, and the watch dials again)."},
		func() float64 { return float64(d.interfaceWatchFailures.Load()) })
}

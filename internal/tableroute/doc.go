// Package tableroute is the one piece of routing that sllbrd's two kernel
// writers share: the SLLBR's policy routes (dataplane/route) and the
// target pod's return routes (internal/targetnet) both keep, per routing
// table of theirs, a default route over next hops (one, or several for
// ECMP) with a blackhole default behind it, and flush the neighbour entry
// of a next hop that left.
//
// It has the plain types (Family, Hop, Route, Key) and the rtnetlink calls
// on them: List (every default route of every table, next hops sorted),
// Replace (one RTM_NEWROUTE with NLM_F_REPLACE: the table is never without
// a route at the key while it changes), Delete (by key only, so a route
// someone else wrote at our key goes too) and DeleteNeighbour.
//
// Promises: the calls change exactly the object they name; a route the
// kernel reports that is neither unicast nor blackhole is listed as one
// that equals no route a caller wants (so it is replaced); absent
// neighbours are not an error.
package tableroute

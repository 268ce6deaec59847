// Command sllbrd is the Stateless-Load-Balancer-Router of a Meridio 2.x
// Gateway: it reads the Gateway's configuration (from static manifest files
// or the API server), balances VIP traffic from nfqueue over the Services'
// endpoints, and attracts that traffic from the data-centre gateways with
// BGP supervised by BFD.
//
// This package only wires: flags, signals, one errgroup, the admin HTTP
// endpoint, and the reconcile loop's apply (applier), which programs the
// dataplane, applies the GatewayRouters and announces the served VIPs in
// one retried pass. Everything it starts lives in the packages it imports,
// except the release of its start-up pages (memory.go): once first ready,
// it unmaps its binary's read-only mappings and drops the pages it no longer
// maps from the page cache, so that its resident set reflects what it uses.
package main

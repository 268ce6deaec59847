// Command labctl builds and removes sllbrd's network-namespace lab by hand,
// for debugging (package lab).
//
//	labctl up [-lbs 1] [-targets 3] [-baseline] [-ecmp] [-bird] [-check] [-detach]
//	labctl status
//	labctl down -run ID | -all
//
// up builds the lab and keeps it until SIGINT or SIGTERM, then removes it;
// with -detach it prints the run id and leaves the lab running (remove it
// with down). Enter a node with `ip netns exec sllbrd-lab-<run>-<node> bash`.
package main

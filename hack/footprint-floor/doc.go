// Command footprint-floor is the memory floor of sllbrd's design: a program
// that links the libraries DESIGN.md builds sllbrd on (GoBGP's server, the
// Prometheus client, client-go's REST client and informer cache with the
// core and discovery types) and does nothing else. Their package
// initialisation is all it runs; it then waits to be stopped. `make
// footprint` (TestIntegrationFootprint) builds it like the image's binary
// and reports its memory at rest beside sllbrd's: no build of sllbrd, whose
// binary has these packages in it, rests below it.
package main

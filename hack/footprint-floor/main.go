package main

import (
	"os"
	"os/signal"
	"syscall"

	_ "github.com/osrg/gobgp/v3/pkg/server"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/api/discovery/v1"
	_ "k8s.io/client-go/rest"
	_ "k8s.io/client-go/tools/cache"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

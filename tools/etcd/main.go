// Command etcd is etcd's own server entry point, built from the pinned etcd module so the
// embedded control plane needs no download at run time.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

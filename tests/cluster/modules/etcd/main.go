// The etcd binary, as etcd's own main package builds it: etcdmain.Main with the command line.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

// Command mpq is the multipath QUIC research tool: it runs experiment
// files (in the simulator or over real sockets), and serves and fetches
// files over mpquic (hq-interop). Its command line is package cli; "mpq
// help" lists the commands.
package main

import (
	"os"

	"github.com/mpq/mpq/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }

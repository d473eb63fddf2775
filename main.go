// Command hookbox receives webhooks, proves them genuine, remembers each
// event once in bbolt and answers only after the commit. See README.md;
// the command line is hookbox/app/cli.
package main

import (
	"context"
	"os"

	"hookbox/app/cli"
)

// version is set at build time with -ldflags "-X main.version=…";
// buildTime, optionally, with -ldflags "-X main.buildTime=…".
var version, buildTime = "dev", ""

func main() {
	cli.Version, cli.BuildTime = version, buildTime
	os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

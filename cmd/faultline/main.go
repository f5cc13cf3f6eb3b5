// Command faultline decodes ARM Cortex-M crash dumps into symbolized,
// explained backtraces. See README.md and design.md for the commands.
package main

import (
	"os"

	"github.com/faultline-dev/faultline/cmd/faultline/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

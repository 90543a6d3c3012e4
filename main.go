// Command idemtest proves that agent tools are retry-safe. See README.md.
package main

import (
	"os"

	"github.com/idemtest/idemtest/cmd"
)

func main() { os.Exit(int(cmd.Main())) }

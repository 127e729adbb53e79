// Command boxmaker is the one binary every role runs from. It only maps its
// name or first argument to a role; see package roles.
package main

import (
	"context"
	"os"

	"boxmaker/roles"
	"boxmaker/roles/bxctl"
)

// version is stamped at build time: -ldflags "-X main.version=...".
var version = "dev"

func main() {
	program := roles.Program{
		Version:  version,
		Roles:    []roles.Role{{Name: "bxctl", Command: bxctl.Command}},
		Commands: bxctl.Commands,
	}
	os.Exit(program.Run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// Command testmain is boxmaker with only the toolkit role, built by the
// toolkit's end-to-end tests so that they run the real role inside real
// sandboxes before main.go lists it. It dispatches exactly as main.go does.
package main

import (
	"context"
	"os"

	"boxmaker/roles"
	"boxmaker/roles/toolkit"

	"github.com/urfave/cli/v3"
)

func main() {
	program := roles.Program{
		Version:  "test",
		Roles:    []roles.Role{{Name: "toolkit", Command: toolkit.Command}},
		Commands: func() []*cli.Command { return nil },
	}
	os.Exit(program.Run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

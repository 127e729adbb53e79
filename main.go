// Command boxmaker is the one binary every role runs from. It only maps its
// name or first argument to a role; see package roles.
package main

import (
	"context"
	"os"

	"boxmaker/roles"
	"boxmaker/roles/brokerd"
	"boxmaker/roles/bxctl"
	"boxmaker/roles/egressd"
	"boxmaker/roles/gatewayd"
	"boxmaker/roles/inferproxy"
	"boxmaker/roles/inspectd"
	"boxmaker/roles/loopd"
	"boxmaker/roles/toolkit"
	"boxmaker/roles/witnessd"
)

// version is stamped at build time: -ldflags "-X main.version=...".
var version = "dev"

// program lists the roles built into this binary, in the role table's order.
func program() roles.Program {
	return roles.Program{
		Version: version,
		Roles: []roles.Role{
			{Name: "egressd", Command: egressd.Command},
			{Name: "inferproxy", Command: inferproxy.Command},
			{Name: "inspectd", Command: inspectd.Command},
			{Name: "gatewayd", Command: gatewayd.Command},
			{Name: "witnessd", Command: witnessd.Command},
			{Name: "brokerd", Command: brokerd.Command},
			{Name: "loopd", Command: loopd.Command},
			{Name: "toolkit", Command: toolkit.Command},
			{Name: "bxctl", Command: bxctl.Command},
		},
		Commands: bxctl.Commands,
	}
}

func main() {
	os.Exit(program().Run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

package roles

import (
	"bytes"
	"context"
	"testing"

	"github.com/urfave/cli/v3"
)

// countingProgram has two roles and one top-level command, and counts how
// often each is built.
func countingProgram(built map[string]int) Program {
	role := func(name string) Role {
		return Role{Name: name, Command: func() *cli.Command {
			built[name]++
			return &cli.Command{Name: name, Action: func(context.Context, *cli.Command) error { return nil }}
		}}
	}
	return Program{Version: "v", Roles: []Role{role("toolkit"), role("loopd")},
		Commands: func() []*cli.Command {
			built["commands"]++
			return []*cli.Command{{Name: "chat", Action: func(context.Context, *cli.Command) error { return nil }}}
		}}
}

// `boxmaker ROLE ...`, the way every sandboxed call starts toolkit, builds
// that role alone; any other command line builds the whole tree, so that
// help and the list of valid names stay complete.
func TestRoleAsFirstArgumentBuildsThatRoleAlone(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want map[string]int
	}{
		{[]string{"boxmaker", "toolkit"}, ExitOK, map[string]int{"toolkit": 1}},
		{[]string{"/boxmaker", "loopd"}, ExitOK, map[string]int{"loopd": 1}},
		{[]string{"toolkit"}, ExitOK, map[string]int{"toolkit": 1}},
		{[]string{"boxmaker", "chat"}, ExitOK, map[string]int{"toolkit": 1, "loopd": 1, "commands": 1}},
		{[]string{"boxmaker", "nope"}, ExitUsage, map[string]int{"toolkit": 1, "loopd": 1, "commands": 1}},
		{[]string{"boxmaker", "--help"}, ExitOK, map[string]int{"toolkit": 1, "loopd": 1, "commands": 1}},
	} {
		built := map[string]int{}
		var out, errOut bytes.Buffer
		if code := countingProgram(built).Run(context.Background(), c.args, &out, &errOut); code != c.code {
			t.Errorf("%q: exit %d, want %d\n%s%s", c.args, code, c.code, out.String(), errOut.String())
		}
		if len(built) != len(c.want) {
			t.Errorf("%q built %v, want %v", c.args, built, c.want)
			continue
		}
		for k, v := range c.want {
			if built[k] != v {
				t.Errorf("%q built %v, want %v", c.args, built, c.want)
			}
		}
	}
}

package hostsetup

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/mountview"
)

// roleView returns how up starts the roles (nil: as usual) and what ends
// that. As root the roles run as users of their own, who may be unable to
// reach the binary or the home: a clone under root's 0700 home is the usual
// case. Then up starts them in a mount view where the directories in the
// way are covered and only the binary, the home and the config's directory
// are bound back, at their own paths (roles/internal/mountview). It runs
// after rootSetup, which checked that no role can change those paths.
func roleView(paths config.Paths, exe string, creds map[string]*syscall.Credential, log io.Writer) (func(*exec.Cmd) error, func(), error) {
	var list []*syscall.Credential
	for _, c := range creds {
		list = append(list, c)
	}
	if len(list) == 0 {
		return nil, func() {}, nil
	}
	need := []string{exe, paths.Home, filepath.Dir(paths.Config)}
	blocked, err := mountview.Blocked(need, list)
	if err != nil || len(blocked) == 0 {
		return nil, func() {}, err
	}
	v, err := mountview.New(need, blocked)
	if err != nil {
		return nil, nil, fmt.Errorf("the role users cannot search %s, on the way to %s, and up cannot show it to them (%w): "+
			"put the binary and the home where they can reach them (or chmod o+x %s)",
			strings.Join(blocked, ", "), strings.Join(need, ", "), err, strings.Join(blocked, " "))
	}
	fmt.Fprintf(log, "up: the role users cannot search %s: they see the binary and the home through a mount namespace of up's, "+
		"where %s holds nothing else\n", strings.Join(blocked, ", "), strings.Join(blocked, ", "))
	return v.Start, v.Close, nil
}

package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"text/tabwriter"
	"time"

	"boxmaker/roles"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:   "status",
		Usage:  "show each role: running or not, pid, uid, socket",
		Flags:  homeFlags(),
		Action: status,
	}
}

func status(_ context.Context, cmd *cli.Command) error {
	paths, err := pathsOf(cmd)
	if err != nil {
		return err
	}
	var st upState
	data, err := os.ReadFile(upStatePath(paths))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.Roles = nil
	case err != nil:
		return err
	default:
		if err := wire.Unmarshal(data, &st); err != nil {
			return fmt.Errorf("%s: %w", upStatePath(paths), err)
		}
	}
	out := cmd.Root().Writer
	if st.Supervisor == 0 || !alive(st.Supervisor) {
		fmt.Fprintf(out, "boxmaker is not up in %s\n", paths.Home)
	} else {
		fmt.Fprintf(out, "boxmaker is up in %s (supervisor pid %d)\n", paths.Home, st.Supervisor)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tSTATE\tPID\tUID\tSOCKET")
	down := 0
	for _, spec := range roles.Table {
		if !spec.Daemon {
			continue
		}
		state, pid, uid, sock := roleState(spec.Name, st)
		if state != "running" && state != "not started" {
			down++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", spec.Name, state, pid, uid, sock)
	}
	tw.Flush()
	if down > 0 && st.Supervisor != 0 && alive(st.Supervisor) {
		return fmt.Errorf("status: %d roles not running", down)
	}
	return nil
}

// roleState checks a role's recorded pid and its socket, not only the record.
func roleState(name string, st upState) (state, pid, uid, sock string) {
	for _, r := range st.Roles {
		if r.Role != name {
			continue
		}
		state, pid, uid = "stopped", fmt.Sprint(r.PID), fmt.Sprint(r.UID)
		if alive(r.PID) {
			state = "running"
		}
		sock = "-"
		if len(r.Sockets) > 0 {
			sock = r.Sockets[0]
			if !answers(sock) {
				state += " (socket not answering)"
			}
		}
		return state, pid, uid, sock
	}
	return "not started", "-", "-", "-"
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

func answers(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

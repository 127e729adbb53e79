package bxctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"text/tabwriter"

	"boxmaker/roles"
	"boxmaker/roles/internal/supervise"
	"boxmaker/roles/internal/termtext"
	"boxmaker/wire"

	"github.com/urfave/cli/v3"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:   "status",
		Usage:  "show each role: running or not, pid, uid, socket (from boxmaker up, else from systemd's units); exit 1 when boxmaker is not up or a role is down",
		Flags:  withJSON("an object: home, up, supervisor, roles (role, state, pid, uid, socket, why), model (upstream, scripted, answers, error); boxmaker up's homes only"),
		Action: status,
	}
}

func status(ctx context.Context, cmd *cli.Command) error {
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
	up := st.Supervisor != 0 && alive(st.Supervisor)
	if !up {
		if all, err := systemdUnits(ctx); err == nil && anyServes(all, paths.Home) {
			if cmd.Bool("json") {
				return fmt.Errorf("status --json reads boxmaker up's state; %s is run by systemd: use systemctl show 'boxmaker-*'", paths.Home)
			}
			down := unitsStatus(out, paths, all)
			printWitnessLine(out, paths) // under systemd as under up
			if down > 0 {
				return fmt.Errorf("status: %d roles not running", down)
			}
			return nil
		}
	}
	if cmd.Bool("json") {
		return statusJSON(ctx, out, paths, st, up)
	}
	if !up {
		fmt.Fprintf(out, "boxmaker is not up in %s\n", paths.Home)
	} else {
		fmt.Fprintf(out, "boxmaker is up in %s (supervisor pid %d)\n", paths.Home, st.Supervisor)
	}
	down := statusTable(out, st)
	if up {
		printModelLine(out, checkModel(ctx, paths, st))
	}
	printWitnessLine(out, paths)
	return statusExit(up, down)
}

// statusExit is status's exit: 1 when boxmaker is not up (the first line
// said so: nothing more on stderr) or a role is down, so that a script can
// wait on `boxmaker status`.
func statusExit(up bool, down int) error {
	switch {
	case !up:
		return errQuiet
	case down > 0:
		return fmt.Errorf("status: %d roles not running", down)
	}
	return nil
}

// errQuiet exits 1 and prints nothing: what failed was said on stdout.
var errQuiet = cli.Exit("", roles.ExitFailed)

// anyServes reports whether any boxmaker unit systemd knows runs its role
// for home: then the home is systemd's, not up's.
func anyServes(all map[string]unit, home string) bool {
	for _, u := range all {
		if u.servesHome(home) {
			return true
		}
	}
	return false
}

// statusTable prints one line per daemon, then why each one that is not
// running is down; it returns how many are down.
func statusTable(out io.Writer, st upState) int {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tSTATE\tPID\tUID\tSOCKET")
	var why []string
	for _, spec := range roles.Table {
		if !spec.Daemon {
			continue
		}
		r := roleState(spec.Name, st)
		if r.state != "running" && r.state != "not started" {
			why = append(why, r.why)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", spec.Name, r.state, r.pid, r.uid, r.sock)
	}
	tw.Flush()
	for _, w := range why {
		if w != "" {
			fmt.Fprintln(out, w)
		}
	}
	return len(why)
}

// roleLine is one role's line of the status table, and why it is down.
type roleLine struct{ state, pid, uid, sock, why string }

// roleState checks a role's recorded pid and socket file, not only the
// record. It never connects: status is no client of most sockets, and each
// role would log the connection as a refused peer.
func roleState(name string, st upState) roleLine {
	for _, r := range st.Roles {
		if r.Role != name {
			continue
		}
		l := roleLine{state: r.State, pid: "-", uid: fmt.Sprint(r.UID), sock: "-"}
		if r.PID != 0 {
			l.pid = fmt.Sprint(r.PID)
		}
		if r.State == supervise.StateRunning || r.State == supervise.StateStarting {
			if !alive(r.PID) {
				l.state = "stopped"
			}
		}
		if len(r.Sockets) > 0 {
			l.sock = r.Sockets[0]
			if l.state == "running" && !isSocket(l.sock) {
				l.state += " (no socket)"
			}
		}
		if r.Reason != "" {
			l.why = fmt.Sprintf("%s %s: %s; next try at %s", name, r.State, termtext.Line(r.Reason), r.Retry)
		}
		return l
	}
	return roleLine{state: "not started", pid: "-", uid: "-", sock: "-"}
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Type() == fs.ModeSocket
}

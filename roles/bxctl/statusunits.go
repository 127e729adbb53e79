package bxctl

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
	"boxmaker/roles/internal/termtext"
	"boxmaker/roles/internal/units"
)

// unitProperties are what status asks systemd of each unit (systemctl show).
const unitProperties = "Id,LoadState,ActiveState,SubState,Result,MainPID,ExecMainStatus,NRestarts,ExecStart"

// unit is one unit as systemctl show describes it: Key=Value.
type unit map[string]string

// systemdUnits asks systemd about boxmaker.target and every daemon's unit,
// keyed by unit name. It fails where systemctl is missing or systemd is not
// running; status then reports what up.json says.
func systemdUnits(ctx context.Context) (map[string]unit, error) {
	names := []string{units.Target}
	for _, spec := range roles.Table {
		if spec.Daemon {
			names = append(names, units.UnitName(spec.Name))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", append([]string{"show", "--property=" + unitProperties, "--"}, names...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("systemctl show: %w", err)
	}
	return parseShow(out), nil
}

// parseShow reads systemctl show's output: one block of Key=Value lines per
// unit, blocks apart by an empty line.
func parseShow(out []byte) map[string]unit {
	all := map[string]unit{}
	cur := unit{}
	flush := func() {
		if id := cur["Id"]; id != "" {
			all[id] = cur
		}
		cur = unit{}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			cur[k] = v
		}
	}
	flush()
	return all
}

// servesHome reports whether u is installed and starts its role for home
// (its ExecStart names --home home), so that a development home is never
// reported with the units of the host's installation.
func (u unit) servesHome(home string) bool {
	return u["LoadState"] == "loaded" && strings.Contains(u["ExecStart"], " --home "+home+" ")
}

// unitsStatus prints the status of a home whose roles run under systemd:
// one line per daemon, then why each one that is not running is down. It
// returns how many of the installed units are down. It reads systemd's
// view, /proc and the socket files; it never connects to a socket.
func unitsStatus(out io.Writer, paths config.Paths, all map[string]unit) int {
	fmt.Fprintf(out, "boxmaker runs under systemd in %s (%s: %s)\n", paths.Home, units.Target, orDash(all[units.Target]["ActiveState"]))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tSTATE\tPID\tUID\tSOCKET")
	var why []string
	for _, spec := range roles.Table {
		if !spec.Daemon {
			continue
		}
		name := units.UnitName(spec.Name)
		l := unitLine(spec.Name, all[name], paths)
		if l.why != "" {
			why = append(why, l.why)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", spec.Name, l.state, l.pid, l.uid, l.sock)
	}
	tw.Flush()
	for _, w := range why {
		fmt.Fprintln(out, w)
	}
	return len(why)
}

// unitLine is one role's line under systemd, with why it is down when it is
// (why is empty for a running role, and for one with no unit: gatewayd
// without a gateway).
func unitLine(role string, u unit, paths config.Paths) roleLine {
	l := roleLine{state: "no unit", pid: "-", uid: "-", sock: "-"}
	if !u.servesHome(paths.Home) {
		return l
	}
	if pid, _ := strconv.Atoi(u["MainPID"]); pid > 0 {
		l.pid, l.uid = strconv.Itoa(pid), uidOf(pid)
	}
	if sock, ok := listenSocket(role, paths); ok {
		l.sock = sock
	}
	active, sub := u["ActiveState"], u["SubState"]
	switch {
	case active == "active" && sub == "running":
		l.state = "running"
		if l.sock != "-" && !isSocket(l.sock) {
			l.state += " (no socket)"
		}
		return l
	case active == "activating" && sub == "auto-restart":
		l.state = "restarting"
	case active == "failed" || active == "inactive":
		l.state = map[string]string{"failed": "failed", "inactive": "stopped"}[active]
	default:
		l.state = active + "/" + sub
	}
	if active == "inactive" && u["Result"] == "success" {
		l.why = fmt.Sprintf("%s stopped: systemctl start %s starts every role", role, units.Target)
		return l
	}
	l.why = fmt.Sprintf("%s %s (result %s, exit status %s, %s restarts): journalctl -u %s says why",
		role, l.state, termtext.Line(orDash(u["Result"])), termtext.Line(orDash(u["ExecMainStatus"])),
		termtext.Line(orDash(u["NRestarts"])), units.UnitName(role))
	return l
}

// listenSocket is the socket role listens on first, by the role table.
func listenSocket(role string, paths config.Paths) (string, bool) {
	for _, p := range roles.Pairs {
		if p.Listener == role {
			return p.Path(paths.Home), true
		}
	}
	return "", false
}

// uidOf is pid's real uid, from /proc; "-" when it cannot be read.
func uidOf(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "-"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

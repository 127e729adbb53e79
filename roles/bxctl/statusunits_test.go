package bxctl

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles"
	"boxmaker/roles/internal/config"
)

// fakeSystemctl puts a systemctl first on PATH that answers show with the
// blocks given, as systemd 252 prints them, and records its arguments.
func fakeSystemctl(t *testing.T, blocks ...string) (argsFile string) {
	t.Helper()
	bin := t.TempDir()
	show, argsFile := filepath.Join(bin, "show.txt"), filepath.Join(bin, "args")
	if err := os.WriteFile(show, []byte(strings.Join(blocks, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %s\n[ \"$1\" = show ] || exit 1\ncat %s\n", argsFile, show)
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return argsFile
}

// unitBlock is one unit's block of systemctl show; pid 0 is none.
func unitBlock(role, home, active, sub string, pid int) string {
	return fmt.Sprintf("Id=boxmaker-%s.service\nLoadState=loaded\nActiveState=%s\nSubState=%s\nResult=%s\nMainPID=%d\n"+
		"ExecMainStatus=%d\nNRestarts=%d\nExecStart={ path=/usr/local/bin/%s ; argv[]=/usr/local/bin/%s --home %s --config /etc/boxmaker/config.toml ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }\n",
		role, active, sub, map[bool]string{true: "success", false: "exit-code"}[active == "active"], pid,
		map[bool]int{true: 0, false: 1}[active == "active"], map[bool]int{true: 0, false: 5}[active == "active"], role, role, home)
}

// stoppedBlock is a unit stopped cleanly (systemctl stop).
func stoppedBlock(role, home string) string {
	return strings.Replace(unitBlock(role, home, "inactive", "dead", 0), "Result=exit-code", "Result=success", 1)
}

func targetBlock(active string) string {
	return "Id=boxmaker.target\nLoadState=loaded\nActiveState=" + active + "\nSubState=" + active + "\n"
}

func notFound(role string) string {
	return "Id=boxmaker-" + role + ".service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0\nExecStart=\n"
}

// listenAll makes each daemon's listening socket in home and fails the test
// if status connects to any of them.
func listenAll(t *testing.T, paths config.Paths) {
	t.Helper()
	for _, spec := range roles.Table {
		sock, ok := listenSocket(spec.Name, paths)
		if !spec.Daemon || !ok {
			continue
		}
		os.MkdirAll(filepath.Dir(sock), 0o700)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
				t.Errorf("status connected to %s", sock)
			}
		}()
	}
}

// TestStatusUnderSystemd: with no boxmaker up in the home, status asks
// systemd about the units that serve it, shows each role's state, pid and
// real uid, names the failed one and why to look, and fails while one is
// down; it never connects to a socket.
func TestStatusUnderSystemd(t *testing.T) {
	home := t.TempDir()
	paths := config.Paths{Home: home}
	listenAll(t, paths)
	me := os.Getpid()
	args := fakeSystemctl(t, targetBlock("active"), unitBlock("egressd", home, "active", "running", me),
		stoppedBlock("inferproxy", home), notFound("gatewayd"),
		unitBlock("brokerd", home, "failed", "failed", 0), unitBlock("loopd", home, "active", "running", me))
	code, out, errOut := run(t, "status", "--home", home)
	if code != 1 || !strings.Contains(errOut, "2 roles not running") {
		t.Errorf("status: %d %s", code, errOut)
	}
	uid := fmt.Sprint(os.Getuid())
	for _, want := range []string{
		"boxmaker runs under systemd in " + home + " (boxmaker.target: active)",
		fmt.Sprintf("\negressd     running  %d  %s    %s", me, uid, filepath.Join(home, "run", "brokerd-egressd")),
		"\ngatewayd    no unit  -", "\nbrokerd     failed   -",
		"\ninferproxy  stopped  -", "inferproxy stopped: systemctl start boxmaker.target starts every role",
		"brokerd failed (result exit-code, exit status 1, 5 restarts): journalctl -u boxmaker-brokerd.service says why",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gatewayd no unit") || strings.Contains(out, "not up") {
		t.Errorf("status counts a role without a unit, or says not up:\n%s", out)
	}
	called, _ := os.ReadFile(args)
	if !strings.HasPrefix(string(called), "show --property=") || !strings.Contains(string(called), "boxmaker-brokerd.service") {
		t.Errorf("systemctl was called as %q", called)
	}
}

// TestStatusUnderSystemdAllRunning exits 0.
func TestStatusUnderSystemdAllRunning(t *testing.T) {
	home := t.TempDir()
	me := os.Getpid()
	var blocks []string
	for _, spec := range roles.Table {
		if spec.Daemon {
			blocks = append(blocks, unitBlock(spec.Name, home, "active", "running", me))
		}
	}
	fakeSystemctl(t, append(blocks, targetBlock("active"))...)
	code, out, errOut := run(t, "status", "--home", home)
	if code != 0 || strings.Count(out, " running (no socket) ") != len(blocks) {
		t.Errorf("status: %d %s\n%s", code, errOut, out)
	}
}

// TestStatusIgnoresUnitsOfAnotherHome: the host's units run the production
// home; a development home is not up because of them.
func TestStatusIgnoresUnitsOfAnotherHome(t *testing.T) {
	home := t.TempDir()
	fakeSystemctl(t, targetBlock("active"), unitBlock("loopd", "/var/lib/boxmaker", "active", "running", os.Getpid()),
		unitBlock("brokerd", home+"x", "active", "running", os.Getpid()))
	code, out, errOut := run(t, "status", "--home", home)
	if code != 1 || !strings.Contains(out, "boxmaker is not up in "+home) || strings.Contains(out, "systemd") {
		t.Errorf("status: %d %s\n%s", code, errOut, out)
	}
}

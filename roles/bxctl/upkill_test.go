package bxctl

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"boxmaker/roles/internal/units"
)

// TestKillHelperRefusesRootAndOthers: the hidden kill helper runs kill(-1)
// only as the one uid it is told, never as root. (It is never run here with
// the test's own uid, which it would empty of processes.)
func TestKillHelperRefusesRootAndOthers(t *testing.T) {
	for _, uid := range []int{0, os.Getuid() + 4242} {
		code, _, errOut := run(t, "up", killUIDCommandName, "--uid", strconv.Itoa(uid))
		if code != 1 || !strings.Contains(errOut, "kill helper: refusing") {
			t.Errorf("--uid %d as uid %d: status %d, %q", uid, os.Getuid(), code, errOut)
		}
	}
	if code, _, _ := run(t, "up", killUIDCommandName); code != 2 {
		t.Errorf("without --uid: status %d, want 2", code)
	}
	if code, out, _ := run(t, "up", "--help"); code != 0 || strings.Contains(out, killUIDCommandName) {
		t.Errorf("up --help shows the kill helper (status %d):\n%s", code, out)
	}
}

// TestUnitsKillTheWholeCgroup: under systemd a stop ends every process of
// the unit, including one that left the process group.
func TestUnitsKillTheWholeCgroup(t *testing.T) {
	svcs := units.Services(units.NewSite(units.DefaultLayout(), "http://127.0.0.1:8080", "mattermost-bot"))
	for _, svc := range svcs {
		var modes []string
		for _, d := range svc.Directives {
			if d.Key == "KillMode" {
				modes = append(modes, d.Value)
			}
		}
		if len(modes) != 1 || modes[0] != "control-group" {
			t.Errorf("%s: KillMode %v, want control-group", svc.Unit, modes)
		}
	}
	if len(svcs) < 5 {
		t.Errorf("only %d units", len(svcs))
	}
}

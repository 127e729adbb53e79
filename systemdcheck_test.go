package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// make systemd-check runs only where a container can boot (CI, as root);
// these keep its scripts whole everywhere else.

// TestSystemdCheckScriptsParse: every script of make systemd-check and make
// deploy parses, and each check the driver names has its script.
func TestSystemdCheckScriptsParse(t *testing.T) {
	if out, err := exec.Command("bash", "-n", "scripts/systemd-check.sh").CombinedOutput(); err != nil {
		t.Errorf("scripts/systemd-check.sh: %v\n%s", err, out)
	}
	inside, _ := filepath.Glob("scripts/systemd-check/*.sh")
	for _, f := range append(inside, "scripts/deploy.sh") {
		if out, err := exec.Command("sh", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
	driver, err := os.ReadFile("scripts/systemd-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	list := regexp.MustCompile(`(?s)\nchecks=\(([^)]*)\)`).FindSubmatch(driver)
	if list == nil {
		t.Fatal("scripts/systemd-check.sh has no checks=(...) list")
	}
	for _, c := range strings.Fields(string(list[1])) {
		if _, err := os.Stat(filepath.Join("scripts/systemd-check", c+".sh")); err != nil && !strings.HasPrefix(c, "deploy-") {
			t.Errorf("check %s has no script: %v", c, err)
		}
	}
}

// TestSystemdCheckCannotWithoutRoot: a machine where the container cannot be
// had gets CANNOT with the reason for every check, and exit 0.
func TestSystemdCheckCannotWithoutRoot(t *testing.T) {
	bin, _ := fakeBin(t, "1000", false)
	cmd := exec.Command("bash", "scripts/systemd-check.sh", "bin/boxmaker")
	cmd.Env = append(os.Environ(), "PATH="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(string(out), "CANNOT(not root: debootstrap and systemd-nspawn need root)"); n != 12 ||
		!strings.Contains(string(out), "0 PASS, 0 FAIL, 12 CANNOT") {
		t.Errorf("%d checks say CANNOT(not root):\n%s", n, out)
	}
}

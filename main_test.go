package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
	"boxmaker/roles"
)

// runProgram runs the multicall entry in-process, as if exec'd with args.
func runProgram(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	p := program()
	p.Version = "v-test"
	code = p.Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDispatch(t *testing.T) {
	valid := filepath.Join("fixtures", "wire", "valid", "tool_request.json")
	invalid := filepath.Join("fixtures", "wire", "invalid", "bom.frame")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a part of what it prints
		stderr string
	}{
		{"version", []string{"boxmaker", "--version"}, 0, "v-test", ""},
		{"help", []string{"boxmaker", "--help"}, 0, "wire", ""},
		{"bare boxmaker shows help, usage status", []string{"boxmaker"}, 2, "COMMANDS", ""},
		{"unknown name", []string{"boxmaker", "frobnicate"}, 2, "", `boxmaker: no role or command named "frobnicate"; valid: ` + tableRoles() + `, approvals, approve, deny, init, up, status, chat, sessions, notes, handles, mcp, jobs, install, audit, grants, wire` + "\n"},
		{"unknown flag", []string{"boxmaker", "--frobnicate"}, 2, "", "flag provided but not defined"},
		{"role as first argument", []string{"boxmaker", "bxctl", "wire", "check", valid}, 0, "tool_request id 7", ""},
		{"bxctl command at the top", []string{"boxmaker", "wire", "check", valid}, 0, "tool_request id 7", ""},
		{"role from argv[0]", []string{"/usr/local/bin/bxctl", "wire", "check", valid}, 0, "tool_request id 7", ""},
		{"argv[0] role rejects unknown names", []string{"bxctl", "bxctl"}, 2, "", `bxctl: no command named "bxctl"; valid: approvals, approve, deny, init, up, status, chat, sessions, notes, handles, mcp, jobs, install, audit, grants, wire`},
		{"unknown name under a group", []string{"boxmaker", "wire", "chekc"}, 2, "", `no command named "chekc"; valid: check`},
		{"other argv[0] acts as boxmaker", []string{"./bm-renamed", "wire", "check", valid}, 0, "tool_request", ""},
		{"invalid frame fails with 1", []string{"boxmaker", "wire", "check", invalid}, 1, "bad_message", "1 invalid"},
		{"missing file argument", []string{"boxmaker", "wire", "check"}, 2, "", "name at least one FILE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runProgram(c.args...)
			if code != c.code {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			if !strings.Contains(stdout, c.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout, c.stdout)
			}
			if !strings.Contains(stderr, c.stderr) || (c.stderr == "" && stderr != "") {
				t.Errorf("stderr %q, want it to contain %q", stderr, c.stderr)
			}
		})
	}
}

// The one-line error for an unknown name is one line.
func TestUnknownNameIsOneLine(t *testing.T) {
	_, _, stderr := runProgram("boxmaker", "nope")
	if strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr is not one line: %q", stderr)
	}
}

// buildBinary runs `make build` into a temporary directory, the way a user
// builds boxmaker, and returns the binary's path.
func buildBinary(t *testing.T) string {
	t.Helper()
	require.Tool(t, "make", "make")
	out := filepath.Join(t.TempDir(), "boxmaker")
	cmd := exec.Command("make", "-s", "build", "OUT="+out, "VERSION=v9.9.9-test")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, msg)
	}
	return out
}

func TestBuiltBinary(t *testing.T) {
	bin := buildBinary(t)
	t.Run("static and stripped", func(t *testing.T) {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary names a dynamic loader (PT_INTERP): it is dynamically linked")
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("the binary needs shared libraries: %v", libs)
		}
		if f.Section(".symtab") != nil {
			t.Error("the binary has a symbol table: it is not stripped")
		}
	})
	t.Run("version stamped", func(t *testing.T) {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "v9.9.9-test") {
			t.Errorf("--version: %s (%v)", out, err)
		}
	})
	t.Run("bxctl symlink", func(t *testing.T) {
		link := filepath.Join(filepath.Dir(bin), "bxctl")
		if err := os.Symlink(bin, link); err != nil {
			t.Fatal(err)
		}
		fixture, _ := filepath.Abs(filepath.Join("fixtures", "wire", "valid", "tool_request.frame"))
		out, err := exec.Command(link, "wire", "check", fixture).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "tool_request id 7 final true") {
			t.Errorf("bxctl wire check: %s (%v)", out, err)
		}
		cmd := exec.Command(link, "nope")
		out, _ = cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.HasPrefix(string(out), "bxctl: no command named") {
			t.Errorf("bxctl nope: status %d, %s", cmd.ProcessState.ExitCode(), out)
		}
	})
}

// tableRoles lists the role table's names as the usage error does.
func tableRoles() string {
	var names []string
	for _, spec := range roles.Table {
		names = append(names, spec.Name)
	}
	return strings.Join(names, ", ")
}

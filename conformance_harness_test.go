package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in tools/mcp) in client mode: it starts a test server, runs a
// client command with the server's URL as its last argument, and judges
// what the client did by the checks it writes to checks.json.
//
// The command it runs is relay.sh, a few lines of sh that hand the URL to
// this test and exit with the status the test hands back. The client
// proper is the test's: boxmaker's whole path (config, pin, mcp call
// through brokerd, toolkit mcp in its sandbox, egressd) or, as the
// harness's own baseline, the Go SDK's client in this process. A relay and
// not the test binary re-executed: the binary's TestMain takes the
// role-user lock, which this test already holds.

// conformanceTimeout bounds one scenario, a whole stack's start included:
// ample on a loaded 2-core machine. The suite's own default is 30 s.
const conformanceTimeout = 4 * time.Minute

// conformanceCheck is one entry of checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// conformanceClient is a client under test: it gets the scenario's server
// URL as the suite gives it, does what the scenario asks, and returns what
// it printed.
type conformanceClient func(t *testing.T, url string) (string, error)

// conformanceSuite finds Node.js 22 and the suite's CLI in the tree
// scripts/mcp-deps.sh installs, or skips.
func conformanceSuite(t *testing.T) (node, cli string) {
	t.Helper()
	s := require.MCP(t, ".")
	cli = filepath.Join(s.Dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(cli); err != nil {
		require.Lacking(t, "mcp", fmt.Sprintf("the MCP conformance suite is not installed (sh scripts/mcp-deps.sh installs it): %v", err))
	}
	return s.Node, cli
}

// relayScript waits for the test's verdict as files in its own directory:
// url (written by the relay), then out and status (written by the test).
// Its wait is bounded, since the suite kills only the shell it started.
const relayScript = `#!/bin/sh
dir=$(dirname "$0")
printf '%s\n' "$1" >"$dir/url.tmp" && mv "$dir/url.tmp" "$dir/url"
i=0
while [ ! -f "$dir/status" ]; do
	i=$((i + 1))
	[ "$i" -gt 6000 ] && { echo "relay: no verdict from the test" >&2; exit 3; }
	sleep 0.05
done
cat "$dir/out"
exit "$(cat "$dir/status")"
`

// runConformance runs one scenario with client and returns its checks and
// what the client printed, with the suite's output in the test log.
func runConformance(t *testing.T, scenario string, client conformanceClient) ([]conformanceCheck, string) {
	t.Helper()
	node, cli := conformanceSuite(t)
	dir := t.TempDir()
	relay := filepath.Join(dir, "relay")
	if err := os.Mkdir(relay, 0o700); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(relay, "relay.sh")
	if err := os.WriteFile(script, []byte(relayScript), 0o700); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	cmd := exec.Command(node, cli, "client", "--command", "sh "+script, "--scenario", scenario,
		"--timeout", strconv.Itoa(int(conformanceTimeout/time.Millisecond)), "-o", results)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// A client that fails the test (t.Fatal) still ends the relay and the
	// suite.
	t.Cleanup(func() {
		verdict(relay, "", "1")
		cmd.Process.Kill()
	})
	url := waitURL(t, relay, exited, &out)
	printed, err := client(t, url)
	if err != nil {
		printed += "\nclient: " + err.Error() + "\n"
		verdict(relay, printed, "1")
	} else {
		verdict(relay, printed, "0")
	}
	select {
	case <-exited:
	case <-time.After(conformanceTimeout):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("the conformance suite did not end:\n%s", out.String())
	}
	t.Logf("conformance client --scenario %s:\n%s", scenario, plainText(out.String()))
	if err != nil {
		t.Errorf("the client failed: %v\n%s", err, printed)
	}
	return readChecks(t, results), printed
}

// plainText drops the suite's colour escapes and any other control
// character but newline and tab, for the test log.
func plainText(s string) string {
	s = regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return -1
		}
		return r
	}, s)
}

// verdict hands the relay what the client printed and its exit status,
// once: the status file is what the relay waits for.
func verdict(relay, printed, status string) {
	if _, err := os.Stat(filepath.Join(relay, "status")); err == nil {
		return
	}
	os.WriteFile(filepath.Join(relay, "out"), []byte(printed), 0o600)
	os.WriteFile(filepath.Join(relay, "status.tmp"), []byte(status), 0o600)
	os.Rename(filepath.Join(relay, "status.tmp"), filepath.Join(relay, "status"))
}

// waitURL returns the URL the relay was given, failing if the suite ends
// first.
func waitURL(t *testing.T, relay string, exited <-chan error, out *bytes.Buffer) string {
	t.Helper()
	var url []byte
	poll.Within(t, time.Minute, "the conformance suite to run the relay", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the conformance suite ended before running its client (%v):\n%s", err, out.String())
		default:
		}
		data, err := os.ReadFile(filepath.Join(relay, "url"))
		url = data
		return err == nil
	})
	return strings.TrimSpace(string(url))
}

// readChecks reads results/<scenario>-<time>/checks.json, which the suite
// writes even when a check failed.
func readChecks(t *testing.T, results string) []conformanceCheck {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(results, "*", "checks.json"))
	if len(files) != 1 {
		t.Fatalf("want one checks.json under %s, found %v", results, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(data, &checks); err != nil {
		t.Fatalf("checks.json: %v\n%s", err, data)
	}
	return checks
}

// judgeChecks fails t unless every check the suite judged is SUCCESS.
// INFO entries are its record of the exchange and are only logged. No
// WARNING is accepted: in these scenarios one means a late reconnection
// (700-1000 ms after a 500 ms retry), a reconnection without Last-Event-ID,
// or a timing the suite could not measure, each a fault of the client's
// path. The checks named in want must be among the SUCCESSes, so that a
// scenario the client never reached cannot pass by having judged nothing.
// A check about sampling or elicitation fails loudly: section 16 refuses
// both, so such a scenario needs its check recorded as refused by design.
func judgeChecks(t *testing.T, checks []conformanceCheck, want []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range checks {
		line := fmt.Sprintf("%s %s: %s", c.Status, c.ID, c.Description)
		if c.ErrorMessage != "" {
			line += " (" + c.ErrorMessage + ")"
		}
		if id := strings.ToLower(c.ID); strings.Contains(id, "elicitation") || strings.Contains(id, "sampling") {
			t.Errorf("%s: this check needs what DESIGN.md section 16 refuses; record it as refused by design", line)
			continue
		}
		switch c.Status {
		case "SUCCESS":
			seen[c.ID] = true
			t.Log(line, string(c.Details))
		case "INFO": // the suite's output above has them
		default:
			t.Errorf("%s %s", line, c.Details)
		}
	}
	for _, id := range want {
		if !seen[id] {
			t.Errorf("the suite judged no %s check", id)
		}
	}
}

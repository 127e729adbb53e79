package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"
	"boxmaker/fixtures/require"
	"boxmaker/fixtures/syncbuf"
)

// The whole stack as the owner runs it: `boxmaker up --scripted-model`
// starts every daemon as a real process (as root, each under its own user),
// and the owner uses `boxmaker chat`, `approve`, `sessions` and `audit`.

// stack is one running `boxmaker up`.
type stack struct {
	t    *testing.T
	bin  string
	home string
	up   *exec.Cmd
	log  *syncbuf.Buffer
	// names maps the names a test gives its sessions to those loopd gave.
	names map[string]string
}

// publicDir makes a directory the role users may enter: under up as root
// each daemon runs as its own user and must reach the binary and the home.
func publicDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "boxmaker-stack")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func startStack(t *testing.T, grants map[string]string, prepare ...func(home string)) *stack {
	t.Helper()
	return startStackUpstream(t, "", grants, prepare...)
}

// startStackUpstream starts the stack against a llama-server at upstream
// (one the test serves), or the scripted model when upstream is "".
func startStackUpstream(t *testing.T, upstream string, grants map[string]string, prepare ...func(home string)) *stack {
	t.Helper()
	return launchStack(t, upstream, nil, grants, prepare...)
}

// startStackScript starts the stack with the scripted model answering by
// script, TOML as `boxmaker up --model-script` reads it.
func startStackScript(t *testing.T, script string, grants map[string]string, prepare ...func(home string)) *stack {
	t.Helper()
	file := filepath.Join(t.TempDir(), "model.toml")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return launchStack(t, "", []string{"--model-script", file}, grants, prepare...)
}

// tomlBasic quotes s as a TOML basic string, every control and non-ASCII
// character as a \u or \U escape, so that a script can hold any text.
func tomlBasic(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0xffff):
			fmt.Fprintf(&b, "\\u%04x", r)
		case r > 0xffff:
			fmt.Fprintf(&b, "\\U%08x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// launchStack starts the stack, with upArgs added to up's command line.
func launchStack(t *testing.T, upstream string, upArgs []string, grants map[string]string, prepare ...func(home string)) *stack {
	t.Helper()
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		require.Bwrap(t, fmt.Errorf("bubblewrap is not installed (apt-get install bubblewrap): %w", err))
	}
	built := buildBinary(t)
	dir := publicDir(t)
	s := &stack{t: t, bin: filepath.Join(dir, "boxmaker"), home: filepath.Join(dir, "home"), log: &syncbuf.Buffer{}, names: map[string]string{}}
	data, _ := os.ReadFile(built)
	if err := os.WriteFile(s.bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	s.run("init", "--home", s.home)
	for id, text := range grants {
		if err := os.WriteFile(filepath.Join(s.home, "etc", "grants", id+".toml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range prepare {
		p(s.home)
	}
	s.up = exec.Command(s.bin, append([]string{"up", "--home", s.home, "--scripted-model", "--create-users"}, upArgs...)...)
	if upstream != "" {
		s.up = exec.Command(s.bin, append([]string{"up", "--home", s.home, "--create-users"}, upArgs...)...)
		s.up.Env = append(os.Environ(), "BOXMAKER_UPSTREAM="+upstream)
	}
	s.up.Stdout, s.up.Stderr = s.log, s.log
	s.up.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	ready := func() bool { return strings.Contains(s.log.String(), "up: ready:") }
	if !poll.Holds(60*time.Second, 50*time.Millisecond, func() bool { return ready() || s.up.ProcessState != nil }) || !ready() {
		t.Fatalf("boxmaker up did not get ready:\n%s", s.log)
	}
	return s
}

func (s *stack) stop() {
	if s.up.ProcessState == nil {
		s.up.Process.Signal(syscall.SIGTERM)
		s.up.Wait()
	}
}

// run runs a bxctl command against the stack's home and fails on error.
func (s *stack) run(args ...string) string {
	s.t.Helper()
	out, err := s.try(args...)
	if err != nil {
		s.t.Fatalf("boxmaker %s: %v\n%s\nup's log:\n%s", strings.Join(args, " "), err, out, s.log)
	}
	return out
}

func (s *stack) try(args ...string) (string, error) {
	if args[0] != "init" {
		args = append(args, "--home", s.home)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = filepath.Dir(s.home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// chatAsync sends one message and returns a channel with its output.
func (s *stack) chatAsync(args ...string) <-chan string {
	done := make(chan string, 1)
	go func() {
		out, err := s.try(append([]string{"chat"}, args...)...)
		done <- fmt.Sprintf("%s(err %v)", out, err)
	}()
	return done
}

func TestStackChatWithApprovedFetch(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><h1>Local Page</h1><p>served for the stack test</p></body></html>")
	}))
	defer page.Close()
	host := strings.TrimPrefix(page.URL, "http://")
	s := startStack(t, map[string]string{
		"fetch-local": "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"public\"\n[constraints]\nhosts = [\"http://" + host + "\"]\n",
	})
	done := s.chatAsync("--message", "fetch "+page.URL+"/")
	id := s.waitApproval()
	if out := s.run("approve", id); !strings.Contains(out, "approved "+id) {
		t.Fatalf("approve: %s", out)
	}
	var out string
	select {
	case out = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("no reply after the approval\n%s", s.log)
	}
	if !strings.Contains(out, "Local Page") || !strings.Contains(out, "(err <nil>)") {
		t.Fatalf("chat: %s\nup's log:\n%s", out, s.log)
	}
	session := regexp.MustCompile(`session (chat-[a-z0-9-]+)`).FindStringSubmatch(out)
	if session == nil {
		t.Fatalf("no session named in %s", out)
	}
	shown := s.run("sessions", "show", session[1])
	for _, want := range []string{"you: fetch " + page.URL, "calls http_fetch", "Local Page"} {
		if !strings.Contains(shown, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, shown)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(s.home, "sessions", session[1], "*.jsonl"))
	if len(logs) == 0 {
		t.Fatalf("no session log for %s", session[1])
	}
	if out, err := exec.Command(s.bin, append([]string{"wire", "check", "--as", "log"}, logs...)...).CombinedOutput(); err != nil {
		t.Errorf("the session log does not verify: %v\n%s", err, out)
	}
	if v := s.run("audit", "verify"); !strings.HasPrefix(v, "ok: 1 records") {
		t.Errorf("audit verify: %s", v)
	}
	if tail := s.run("audit", "tail", "-n", "1"); !strings.Contains(tail, `"outcome":"approved","grant":"fetch-local","approver":"local:`+me(t)+`"`) {
		t.Errorf("audit record: %s", tail)
	}
}

// waitApproval returns the id of the first pending approval.
func (s *stack) waitApproval() string {
	s.t.Helper()
	re := regexp.MustCompile(`"approval":"(ap-[0-9a-f]+)"`)
	var m []string
	if !poll.Holds(60*time.Second, 100*time.Millisecond, func() bool { m = re.FindStringSubmatch(s.run("approvals", "--json")); return m != nil }) {
		s.t.Fatalf("no approval appeared\n%s", s.log)
	}
	return m[1]
}

// Ten turns in one session replay exactly: the server's cache hits each time.
func TestStackTenTurnsKeepTheCache(t *testing.T) {
	s := startStack(t, nil)
	out := s.run("chat", "--message", "hello 0")
	session := regexp.MustCompile(`session (chat-[a-z0-9-]+)`).FindStringSubmatch(out)
	if session == nil {
		t.Fatalf("no session in %s", out)
	}
	for i := 1; i < 10; i++ {
		s.run("chat", "--session", session[1], "--message", fmt.Sprintf("hello %d", i))
	}
	shown := s.run("sessions", "show", session[1])
	if strings.Count(shown, "you: hello") != 10 || strings.Contains(shown, "cache loss") {
		t.Fatalf("after ten turns:\n%s", shown)
	}
}

// Killing any daemon with SIGKILL: up restarts it, the session goes on, and
// the audit log still verifies.
func TestStackSurvivesKilledDaemons(t *testing.T) {
	s := startStack(t, nil)
	out := s.run("chat", "--message", "hello")
	session := regexp.MustCompile(`session (chat-[a-z0-9-]+)`).FindStringSubmatch(out)[1]
	for _, role := range []string{"loopd", "brokerd", "inferproxy", "egressd"} {
		pid := s.pidOf(role)
		syscall.Kill(pid, syscall.SIGKILL)
		if !poll.Holds(30*time.Second, 100*time.Millisecond, func() bool { p := s.pidOf(role); return p != 0 && p != pid }) {
			t.Fatalf("%s was not restarted\n%s", role, s.log)
		}
		s.run("chat", "--session", session, "--wait", "30s", "--message", "still there after "+role+"?")
	}
	if shown := s.run("sessions", "show", session); strings.Count(shown, "you: ") != 5 {
		t.Errorf("the session lost turns:\n%s", shown)
	}
	s.run("audit", "verify")
}

// pidOf reads a running role's pid from `boxmaker status`.
func (s *stack) pidOf(role string) int {
	out, _ := s.try("status")
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == role && f[1] == "running" {
			var pid int
			fmt.Sscan(f[2], &pid)
			return pid
		}
	}
	return 0
}

// Under up as root each daemon runs as its own user, and one role's user
// cannot reach what belongs to another.
func TestStackPrivilegeSeparation(t *testing.T) {
	require.Root(t, "privilege separation needs up to run as root")
	s := startStack(t, nil)
	os.WriteFile(filepath.Join(s.home, "etc", "secrets", "consult-key"), []byte("sk-secret\n"), 0o640)
	for role, user := range map[string]string{"egressd": "boxmaker-egress", "inferproxy": "boxmaker-infer", "inspectd": "boxmaker-inspect", "brokerd": "boxmaker-broker", "loopd": "boxmaker-loop"} {
		if got := uidName(t, s.pidOf(role)); got != user {
			t.Errorf("%s runs as %s, want %s", role, got, user)
		}
	}
	run := filepath.Join(s.home, "run")
	for _, c := range []struct {
		user, what string
		script     string
	}{
		{"boxmaker-loop", "list the audit log", "ls " + filepath.Join(s.home, "audit")},
		{"boxmaker-loop", "read the secrets", "cat " + filepath.Join(s.home, "etc", "secrets", "consult-key")},
		{"boxmaker-loop", "write a grant", "echo x > " + filepath.Join(s.home, "etc", "grants", "mine.toml")},
		{"boxmaker-infer", "reach brokerd's socket directory", "ls " + filepath.Join(run, "loopd-brokerd")},
		{"boxmaker-egress", "reach brokerd's socket directory", "ls " + filepath.Join(run, "loopd-brokerd")},
		{"boxmaker-gateway", "reach brokerd's socket directory", "ls " + filepath.Join(run, "loopd-brokerd")},
		{"boxmaker-loop", "read brokerd's session state", "ls " + filepath.Join(s.home, "broker")},
		// The quarantined inspect requests hold handles' content: neither
		// loopd's user nor inferproxy's reaches them (issue 23).
		{"boxmaker-infer", "reach inspectd's socket directory", "ls " + filepath.Join(run, "brokerd-inspectd")},
		{"boxmaker-loop", "reach inspectd's socket directory", "ls " + filepath.Join(run, "brokerd-inspectd")},
	} {
		cmd := exec.Command("su", "-s", "/bin/sh", c.user, "-c", c.script)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("%s could %s:\n%s", c.user, c.what, out)
		}
	}
	// loopd's own uid cannot reach the owner's socket to brokerd with the
	// real client (roles/brokerd's TestWrongUIDIsRefusedPastPermissions shows
	// SO_PEERCRED refusing it even when the directory lets it through).
	cmd := exec.Command(s.bin, "approvals", "--home", s.home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: credOf(t, "boxmaker-loop")}
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("loopd's user listed the approvals:\n%s", out)
	}
}

func uidName(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" {
			out, _ := exec.Command("id", "-nu", f[1]).Output()
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

func credOf(t *testing.T, user string) *syscall.Credential {
	t.Helper()
	var uid, gid uint32
	for _, f := range []struct {
		flag string
		v    *uint32
	}{{"-u", &uid}, {"-g", &gid}} {
		out, err := exec.Command("id", f.flag, user).Output()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Sscan(string(out), f.v)
	}
	return &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
}

// `make run` in a pseudo-terminal reaches the chat prompt and answers a
// message, and leaving chat stops the stack.
func TestMakeRunInATerminal(t *testing.T) {
	require.Tool(t, "script", "bsdutils")
	require.Tool(t, "make", "make")
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		require.Bwrap(t, fmt.Errorf("bubblewrap is not installed (apt-get install bubblewrap): %w", err))
	}
	dir := publicDir(t)
	state, bin := filepath.Join(dir, "state"), filepath.Join(dir, "boxmaker")
	cmd := exec.Command("script", "-qec", "make -s run STATE="+state+" OUT="+bin, "/dev/null")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string) {
		if !poll.Holds(120*time.Second, 50*time.Millisecond, func() bool { return strings.Contains(out.String(), what) }) {
			cmd.Process.Kill()
			t.Fatalf("no %q in:\n%s", what, out.String())
		}
	}
	waitFor("you> ")
	io.WriteString(stdin, "hello from the terminal\r")
	waitFor("scripted model")
	io.WriteString(stdin, "/quit\r")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("make run: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("make run did not end after /quit:\n%s", out.String())
	}
	if data, err := os.ReadFile(filepath.Join(state, "run", "up.json")); err == nil {
		t.Errorf("up is still running after chat ended: %s", data)
	}
}

// Interactive chat in a terminal: a call that needs approval is shown as
// brokerd describes it and answered y right there.
func TestStackInteractiveApproval(t *testing.T) {
	require.Tool(t, "script", "bsdutils")
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "Terminal Approved Page\n")
	}))
	defer page.Close()
	host := strings.TrimPrefix(page.URL, "http://")
	s := startStack(t, map[string]string{
		"fetch-local": "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"public\"\n[constraints]\nhosts = [\"http://" + host + "\"]\n",
	})
	cmd := exec.Command("script", "-qec", s.bin+" chat --home "+s.home, "/dev/null")
	stdin, _ := cmd.StdinPipe()
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor := func(what string) {
		if !poll.Holds(60*time.Second, 50*time.Millisecond, func() bool { return strings.Contains(out.String(), what) }) {
			t.Fatalf("no %q on the terminal:\n%s\nup's log:\n%s", what, out.String(), s.log)
		}
	}
	waitFor("you> ")
	io.WriteString(stdin, "fetch "+page.URL+"/\r")
	waitFor("? [y/N]")
	if !strings.Contains(out.String(), "grant fetch-local, session taint private") {
		t.Errorf("the approval is not shown as brokerd describes it:\n%s", out.String())
	}
	io.WriteString(stdin, "y\r")
	waitFor("Terminal Approved Page")
	io.WriteString(stdin, "/quit\r")
	cmd.Wait()
	if tail := s.run("audit", "tail", "-n", "1"); !strings.Contains(tail, `"outcome":"approved","grant":"fetch-local","approver":"local:`+me(t)+`"`) {
		t.Errorf("audit record: %s", tail)
	}
}

// me is the login name of the user running the tests: the approver the
// audit log names for `boxmaker approve`.
func me(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

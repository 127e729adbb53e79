package brokerd

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/fixtures/poll"
	"boxmaker/roles/internal/sock"
	"boxmaker/wire"
)

// What the owner approves is what runs (DESIGN.md section 11), driven over
// brokerd's real sockets.

// Padding, key order and escapes are gone before anything is decided,
// shown or run: the approval, the audit record and the sandbox all get the
// canonical bytes, and the subject says what the call acts on.
func TestPaddedArgumentsAreShownCanonically(t *testing.T) {
	h := newHome(t, "", allGrants())
	h.start()
	padded := "{" + strings.Repeat(" ", 12000) + `"command"` + strings.Repeat("\n", 50) + `:"printf \u0070added"}`
	done := make(chan wire.Message, 1)
	go func() {
		got, _, _ := h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s1"), Call: 5, Tool: "shell", Arguments: padded})
		done <- got
	}()
	a := waitForPending(t, h)
	if a.Arguments != `{"command":"printf padded"}` || a.Subject != "printf padded" {
		t.Fatalf("approval shows arguments %q, subject %q", a.Arguments, a.Subject)
	}
	if out, err := h.bxctl("approve", a.Approval); err != nil {
		t.Fatalf("approve: %v %s", err, out)
	}
	if r, ok := (<-done).(wire.Result); !ok || !strings.HasPrefix(r.Content, "padded\n") {
		t.Fatalf("the approved call gave %#v", r)
	}
	lines, err := audit.Tail(filepath.Join(h.dir, "audit"), 1)
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], `"arguments":"{\"command\":\"printf padded\"}"`) {
		t.Errorf("audit: %v %q", err, lines)
	}
}

func waitForPending(t *testing.T, h *home) wire.Approval {
	t.Helper()
	var first wire.Approval
	poll.Within(t, 15*time.Second, "an approval to appear", func() bool {
		res, _, err := h.call("bxctl", wire.ApprovalList{})
		if err != nil {
			return false
		}
		list := res.(wire.ApprovalListResult).Approvals
		if len(list) > 0 {
			first = list[0]
		}
		return len(list) > 0
	})
	return first
}

// A caller that hangs up takes its pending approval with it: it is listed
// nowhere, approving its id fails, and nothing runs or is recorded.
func TestApprovalWithdrawnWhenCallerLeaves(t *testing.T) {
	h := newHome(t, "", allGrants())
	h.start()
	c, err := sock.Dial(h.socket("loopd"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go c.Call(ctx, wire.ToolRequest{Session: sessionID(t, "s1"), Call: 9, Tool: "shell", Arguments: `{"command":"printf left"}`}, nil)
	a := waitForPending(t, h)
	cancel()
	c.Close()
	poll.Until(t, "the approval to leave the list once its caller left", func() bool {
		out, _ := h.bxctl("approvals")
		return out == "no pending approvals"
	})
	if out, err := h.bxctl("approve", a.Approval); err == nil || !strings.Contains(out, "no pending approval") {
		t.Fatalf("approving the withdrawn %s: %v %q", a.Approval, err, out)
	}
	if lines, _ := audit.Tail(filepath.Join(h.dir, "audit"), 10); len(lines) != 0 {
		t.Errorf("a withdrawn approval left audit records: %q", lines)
	}
	// brokerd's log reaches the test through a pipe: on a loaded machine
	// the line may come a little after the approval left the list.
	poll.Until(t, "brokerd's log to say the approval was withdrawn", func() bool {
		return strings.Contains(h.log.String(), "approval "+a.Approval+": withdrawn")
	})
}

// Past max_pending_approvals an ask fails at once with a clear message, and
// the approvals already waiting stay answerable.
func TestPendingApprovalsAreBounded(t *testing.T) {
	h := newHome(t, "[broker]\nmax_pending_approvals = 2\n", allGrants())
	h.start()
	for i := range 2 {
		go h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s1"), Call: wire.CallID(i + 1), Tool: "shell", Arguments: `{"command":"printf wait"}`})
	}
	poll.Within(t, 15*time.Second, "two approvals to appear", func() bool {
		res, _, _ := h.call("bxctl", wire.ApprovalList{})
		l, ok := res.(wire.ApprovalListResult)
		return ok && len(l.Approvals) == 2
	})
	got := h.toolCall("s2", "shell", `{"command":"printf third"}`)
	if f, ok := got.(wire.Failed); !ok || !strings.Contains(f.Message, "not asked") || !strings.Contains(f.Message, "limit 2") {
		t.Fatalf("a third ask gave %#v, want failed: not asked (limit 2)", got)
	}
	if r := h.toolCall("s2", "shell", `{"command":"echo still served"}`); !isResult(r) {
		t.Errorf("an auto call after the bound: %#v", r)
	}
}

const sleepGrant = "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\npatterns = [\"sleep 0\\\\.[0-9]\"]\n"

// A hundred calls at once never run more than max_sandboxes sandboxes; the
// calls past the bound fail with a clear message and the rest run.
func TestSandboxesAreBounded(t *testing.T) {
	const bound, calls = 3, 100
	h := newHome(t, fmt.Sprintf("[broker]\nmax_sandboxes = %d\nmax_connections = 200\n", bound), map[string]string{"sleep": sleepGrant})
	h.start()
	stop := make(chan struct{})
	most := make(chan int, 1)
	go func() { most <- watchSandboxes(h.proc.Process.Pid, stop) }()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran, refused := 0, 0
	for i := range calls {
		wg.Go(func() {
			res, _, err := h.call("loopd", wire.ToolRequest{Session: sessionID(t, "s"+strconv.Itoa(i)), Call: 1, Tool: "shell", Arguments: `{"command":"sleep 0.3"}`})
			mu.Lock()
			defer mu.Unlock()
			switch r := res.(type) {
			case wire.Result:
				ran++
			case wire.Failed:
				if !strings.Contains(r.Message, "not run") || !strings.Contains(r.Message, "its limit") {
					t.Errorf("failed for another reason: %q", r.Message)
				}
				refused++
			default:
				t.Errorf("call %d: %#v %v", i, res, err)
			}
		})
	}
	wg.Wait()
	close(stop)
	if n := <-most; n > bound {
		t.Errorf("%d sandboxes ran at once; the bound is %d", n, bound)
	}
	if ran == 0 || refused == 0 || ran+refused != calls {
		t.Errorf("ran %d, refused %d of %d", ran, refused, calls)
	}
	t.Logf("ran %d, refused %d", ran, refused)
}

// watchSandboxes counts, until stop, the bubblewrap processes brokerd has
// started, and returns the most seen at once.
func watchSandboxes(broker int, stop <-chan struct{}) int {
	most := 0
	for {
		select {
		case <-stop:
			return most
		default:
		}
		n := 0
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			s := string(stat)
			i := strings.LastIndexByte(s, ')')
			if i < 0 || !strings.Contains(s[:i], "(bwrap") {
				continue
			}
			fields := strings.Fields(s[i+1:])
			if len(fields) > 1 && fields[1] == strconv.Itoa(broker) {
				n++
			}
		}
		most = max(most, n)
		time.Sleep(2 * time.Millisecond)
	}
}

// A peer that sends half a frame and goes silent is dropped after
// frame_timeout, and another peer is served meanwhile.
func TestHalfFrameIsDropped(t *testing.T) {
	h := newHome(t, "[broker]\nframe_timeout = \"500ms\"\n", allGrants())
	h.start()
	half, err := net.Dial("unix", h.socket("loopd"))
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := half.Write([]byte{0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if res, _, err := h.call("loopd", wire.ToolList{Session: sessionID(t, "s1")}); err != nil {
		t.Fatalf("another peer was not served: %v", err)
	} else if _, ok := res.(wire.ToolListResult); !ok {
		t.Fatalf("tool_list: %#v", res)
	}
	half.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	buf := make([]byte, 4096)
	for {
		if _, err := half.Read(buf); err != nil {
			break
		}
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the half frame held its connection for %v", waited)
	}
}

package egressd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/fixtures/poll"

	"golang.org/x/sys/unix"
)

// keptPair is a connection a compromised sandbox made for egressd: it
// sends one end of a socketpair on the channel as toolkit does, but keeps
// its own descriptor of that end (theirs), which shares the open file
// description, flags included, with the one egressd receives.
type keptPair struct {
	mine   net.Conn
	br     *bufio.Reader
	theirs int
}

func (sb *mcpSandbox) dialKeeping(t *testing.T) *keptPair {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sb.ch.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds[1]), nil); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "mine")
	mine, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Closing mine ends whatever egressd still waits for on it, so that
	// a failing test does not hang egressd's shutdown too.
	t.Cleanup(func() { mine.Close() })
	return &keptPair{mine: mine, br: bufio.NewReader(mine), theirs: fds[1]}
}

// exchange makes one request on the pair and reads its whole response.
func (p *keptPair) exchange(t *testing.T, request string) string {
	t.Helper()
	if _, err := io.WriteString(p.mine, request); err != nil {
		t.Fatal(err)
	}
	_ = p.mine.SetReadDeadline(time.Now().Add(poll.Patience))
	resp, err := http.ReadResponse(p.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return bodyOf(t, resp)
}

// makeBlocking clears O_NONBLOCK on the description egressd reads and
// writes.
func (p *keptPair) makeBlocking(t *testing.T) {
	t.Helper()
	if err := syscall.SetNonblock(p.theirs, false); err != nil {
		t.Fatal(err)
	}
}

// waitForRead waits until egressd has read all that was written to it.
func (p *keptPair) waitForRead(t *testing.T) {
	t.Helper()
	poll.Until(t, "egressd to read what the sandbox wrote", func() bool {
		n, err := unix.IoctlGetInt(p.theirs, unix.SIOCINQ)
		return err == nil && n == 0
	})
}

// hungUp reports whether egressd has closed its end of the pair, without
// reading from it (which would let a write of egressd's go on).
func (p *keptPair) hungUp(t *testing.T) bool {
	raw, err := p.mine.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var events int16
	_ = raw.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if _, err := unix.Poll(pfd, 0); err == nil {
			events = pfd[0].Revents
		}
	})
	return events&(unix.POLLRDHUP|unix.POLLHUP) != 0
}

// A compromised sandbox that clears O_NONBLOCK on the descriptor it sent
// (the description is shared) must not make egressd block in read(2) or
// write(2) where no deadline and no Close reach it: the connection would
// outlive its channel, the channel's goroutine would wait for it forever,
// and the call slot the channel holds would never come back.
func TestMCPChannelSandboxCannotMakeItsConnectionBlock(t *testing.T) {
	big := strings.Repeat("x", 900<<10)
	up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "big" {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, "hello")
	})
	const post = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
	for _, stuck := range []string{"read", "write"} {
		t.Run(stuck, func(t *testing.T) {
			h := startEgressd(t, Options{})
			sb := h.openMCP("http://"+up.hostPort()+"/mcp", nil)
			p := sb.dialKeeping(t)
			// Answered: egressd has made the description non-blocking.
			if body := p.exchange(t, post); body != "hello" {
				t.Fatalf("the first exchange: %q", body)
			}
			p.makeBlocking(t)
			if stuck == "read" {
				// Half a head: egressd reads it and waits for the rest.
				io.WriteString(p.mine, "POST /mcp HTTP/1.1\r\n")
				p.waitForRead(t)
			} else {
				// A response far over a socket's buffer, never read.
				io.WriteString(p.mine, "POST /mcp HTTP/1.1\r\nHost: x\r\nAccept: big\r\nContent-Length: 0\r\n\r\n")
				waitForFullBuffer(t, p)
			}
			syscall.Close(p.theirs) // the socket is egressd's alone now
			if p.hungUp(t) {
				t.Fatalf("egressd ended the connection (%s) before the channel", stuck)
			}
			sb.ch.Close() // the instance ended
			if !poll.Holds(poll.Patience, 5*time.Millisecond, func() bool { return p.hungUp(t) }) {
				t.Fatalf("egressd kept a connection (%s) past its channel's end", stuck)
			}
		})
	}
}

// waitForFullBuffer waits until egressd's writes to p have stopped
// coming: the buffer is full, and egressd's next write waits.
func waitForFullBuffer(t *testing.T, p *keptPair) {
	t.Helper()
	raw, err := p.mine.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	poll.Until(t, "egressd to fill the connection's buffer", func() bool {
		n := 0
		_ = raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		full := n >= 64<<10 && n == last
		last = n
		return full
	})
}

// openFDs counts this process's descriptors: egressd runs in it.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Descriptors the channel does not serve leak none of egressd's: more than
// fit beside one byte (the kernel truncates the control message and closes
// the rest, MSG_CTRUNC), a packet socket of the Unix family, and extras
// beside a good one are all closed, and the channel goes on.
func TestMCPChannelLeaksNoDescriptor(t *testing.T) {
	up := newUpstream(t, false, hello)
	h := startEgressd(t, Options{})
	url := "http://" + up.hostPort() + "/mcp"
	sb := h.openMCP(url, nil)
	if resp, body := sb.do(http.MethodPost, url, nil, ""); resp.StatusCode != http.StatusOK || body != "hello" {
		t.Fatalf("before: %d %q", resp.StatusCode, body)
	}
	// An *os.File's finalizer would close what egressd leaked.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := openFDs(t)
	seq, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]int, 200)
	for i := range many {
		many[i] = seq[0]
	}
	for _, fds := range [][]int{many, {seq[0]}, {seq[1], seq[0], seq[0]}} {
		if _, _, err := sb.ch.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds...), nil); err != nil {
			t.Fatal(err)
		}
	}
	syscall.Close(seq[0])
	syscall.Close(seq[1])
	if resp, body := sb.do(http.MethodPost, url, nil, ""); resp.StatusCode != http.StatusOK || body != "hello" {
		t.Errorf("after the other descriptors: %d %q", resp.StatusCode, body)
	}
	poll.Until(t, "egressd to hold no more descriptors than before", func() bool { return openFDs(t) <= before })
}

// oracleToken is the secret a compromised sandbox guesses at, a byte at a
// time, in TestMCPChannelHoldsBackNoSecretOracle.
const oracleToken = "s3cr3t-oracle-token"

// What egressd holds back of a response, and drops where it cuts one, must
// not depend on whether the bytes begin the secret: a compromised sandbox
// can have a server echo what it sends (a tool's argument, quoted in a
// result or an error), and if the held or dropped tail told it whether its
// guess begins the token, it would learn the token a byte at a time. It
// sees both where egressd cuts at max_bytes and how egressd chunks what it
// relays as it comes.
func TestMCPChannelHoldsBackNoSecretOracle(t *testing.T) {
	right, wrong := oracleToken[:3], "s3x"
	t.Run("cut", func(t *testing.T) {
		up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) })
		limits := testLimits
		limits.MaxBytes = 64
		h := startEgressd(t, Options{Limits: limits})
		url := "http://" + up.hostPort() + "/mcp"
		sb := h.openMCP(url, ptr("Bearer "+oracleToken))
		echoed := func(guess string) string {
			_, body := sb.do(http.MethodPost, url, nil, strings.Repeat("a", 61)+guess+"zzzz")
			return body
		}
		if a, b := echoed(right), echoed(wrong); len(a) != len(b) {
			t.Errorf("the cut kept %d bytes after a guess that begins the token, %d after one that does not", len(a), len(b))
		}
	})
	t.Run("stream", func(t *testing.T) {
		more := make(chan struct{})
		up := newUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
			guess, _ := io.ReadAll(r.Body)
			io.WriteString(w, strings.Repeat("a", 40)+string(guess))
			w.(http.Flusher).Flush()
			select {
			case <-more:
				io.WriteString(w, "\n")
			case <-r.Context().Done():
			}
		})
		h := startEgressd(t, Options{})
		url := "http://" + up.hostPort() + "/mcp"
		sb := h.openMCP(url, ptr("Bearer "+oracleToken))
		firstChunk := func(guess string) string {
			conn, err := sb.dial(context.Background(), "", "")
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(guess), guess)
			_ = conn.SetReadDeadline(time.Now().Add(poll.Patience))
			br := bufio.NewReader(conn)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if line == "\r\n" {
					break
				}
			}
			size, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			more <- struct{}{}
			return strings.TrimSpace(size)
		}
		if a, b := firstChunk(right), firstChunk(wrong); a != b {
			t.Errorf("the first chunk was %s bytes (hex) after a guess that begins the token, %s after one that does not", a, b)
		}
	})
}

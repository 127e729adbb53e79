package fdpass

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

// connPair returns two connected Unix stream connections.
func connPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	a, b, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	return fileConn(t, a), fileConn(t, b)
}

func fileConn(t *testing.T, f *os.File) *net.UnixConn {
	t.Helper()
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.UnixConn)
}

func readyEnvelope(id uint64) wire.Envelope {
	return wire.Envelope{ID: id, Final: true, Msg: wire.EgressReady{}}
}

// pipe returns a pipe whose write end is to be sent; allClosed then tells
// whether the receiver closed its copy.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// allClosed reports whether every write end of r's pipe is closed: a read
// then ends at once instead of waiting.
func allClosed(t *testing.T, r *os.File) bool {
	t.Helper()
	if err := r.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := r.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

func TestFrameAndDescriptorRoundTrip(t *testing.T) {
	a, b := connPair(t)
	r, w := pipe(t)
	auth := "Bearer x"
	sent := wire.Envelope{ID: 7, Final: true, Msg: wire.EgressOpen{Hosts: []string{"a.example"}, Method: "POST", Authorization: &auth}}
	if err := SendFrameWithFile(a, sent, w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, f, err := ReceiveFrameWithFile(b)
	if err != nil {
		t.Fatal(err)
	}
	open, ok := got.Msg.(wire.EgressOpen)
	if got.ID != 7 || !ok || open.Hosts[0] != "a.example" || *open.Authorization != auth {
		t.Fatalf("got %#v", got)
	}
	if _, err := f.Write([]byte("through")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, err := io.ReadAll(r)
	if err != nil || string(data) != "through" {
		t.Fatalf("read %q, %v", data, err)
	}
}

// TestReceiveStopsAtTheFrameEnd sends a frame without a descriptor and then
// one with: each read must get exactly its own.
func TestReceiveStopsAtTheFrameEnd(t *testing.T) {
	a, b := connPair(t)
	_, w := pipe(t)
	if err := wire.WriteEnvelope(a, readyEnvelope(1)); err != nil {
		t.Fatal(err)
	}
	if err := SendFrameWithFile(a, readyEnvelope(2), w); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		id    uint64
		files int
	}{{1, 0}, {2, 1}} {
		e, files, err := ReceiveFrame(b)
		if err != nil || e.ID != want.id || len(files) != want.files {
			t.Fatalf("got id %d, %d files, %v; want id %d, %d files", e.ID, len(files), err, want.id, want.files)
		}
		closeAll(files)
	}
}

func TestFrameWithoutDescriptorIsRefused(t *testing.T) {
	a, b := connPair(t)
	if err := wire.WriteEnvelope(a, readyEnvelope(3)); err != nil {
		t.Fatal(err)
	}
	e, f, err := ReceiveFrameWithFile(b)
	if !errors.Is(err, ErrNoFile) || wire.CodeOf(err) != wire.BadMessage || f != nil {
		t.Fatalf("got %v, %v", f, err)
	}
	if e.ID != 3 {
		t.Errorf("the envelope was not returned for its id: %#v", e)
	}
}

// sendRaw sends a frame with several descriptors at once, as a confused or
// hostile sender might.
func sendRaw(t *testing.T, c *net.UnixConn, frame []byte, files []*os.File) {
	t.Helper()
	var fds []int
	for _, f := range files {
		fds = append(fds, int(f.Fd()))
	}
	if _, _, err := c.WriteMsgUnix(frame, syscall.UnixRights(fds...), nil); err != nil {
		t.Fatal(err)
	}
}

func encodedFrame(t *testing.T, e wire.Envelope) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := wire.WriteEnvelope(&buf, e); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sendPipes sends n pipe write ends with frame, closes the sender's copies,
// and returns the read ends.
func sendPipes(t *testing.T, c *net.UnixConn, frame []byte, n int) []*os.File {
	t.Helper()
	var readers, writers []*os.File
	for range n {
		r, w := pipe(t)
		readers, writers = append(readers, r), append(writers, w)
	}
	sendRaw(t, c, frame, writers)
	closeAll(writers)
	return readers
}

func TestExtraDescriptorsAreClosed(t *testing.T) {
	for _, n := range []int{3, maxFiles + 4} {
		a, b := connPair(t)
		readers := sendPipes(t, a, encodedFrame(t, readyEnvelope(4)), n)
		_, f, err := ReceiveFrameWithFile(b)
		if !errors.Is(err, ErrExtraFiles) || wire.CodeOf(err) != wire.BadMessage || f != nil {
			t.Fatalf("%d descriptors: got %v, %v", n, f, err)
		}
		for i, r := range readers {
			if !allClosed(t, r) {
				t.Errorf("%d descriptors: descriptor %d is still open in the receiver", n, i)
			}
		}
	}
}

func TestDescriptorsOfABadFrameAreClosed(t *testing.T) {
	frames := map[string][]byte{
		"empty frame":     {0, 0, 0, 0},
		"not an envelope": append([]byte{0, 0, 0, 2}, "{}"...),
	}
	for name, frame := range frames {
		a, b := connPair(t)
		readers := sendPipes(t, a, frame, 1)
		_, files, err := ReceiveFrame(b)
		if err == nil || files != nil {
			t.Fatalf("%s: got %d files, %v", name, len(files), err)
		}
		if !allClosed(t, readers[0]) {
			t.Errorf("%s: the descriptor is still open in the receiver", name)
		}
	}
}

func TestEndOfStream(t *testing.T) {
	a, b := connPair(t)
	a.Close()
	if _, _, err := ReceiveFrame(b); !errors.Is(err, io.EOF) {
		t.Fatalf("got %v, want EOF", err)
	}
	c, d := connPair(t)
	if _, err := c.Write([]byte{0, 0, 0, 9, '{'}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, _, err := ReceiveFrame(d); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want unexpected EOF", err)
	}
}

package wire

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
)

// headerOnlyReader serves a frame's header and fails the test on any read
// that would go past it: a reader of a bad length must stop at the header.
type headerOnlyReader struct {
	t      *testing.T
	header []byte
	off    int
}

func (r *headerOnlyReader) Read(p []byte) (int, error) {
	if r.off >= len(r.header) {
		r.t.Errorf("read of %d bytes past the %d-byte header", len(p), len(r.header))
		return 0, errors.New("read past the header")
	}
	n := copy(p, r.header[r.off:])
	r.off += n
	return n, nil
}

func TestBadLengthNeverReadsPastHeader(t *testing.T) {
	for _, name := range []string{"over_max.frame", "huge_length.frame", "zero_length.frame"} {
		t.Run(name, func(t *testing.T) {
			raw := readFixture(t, "wire/invalid/"+name)
			r := &headerOnlyReader{t: t, header: raw[:HeaderSize]}
			_, err := ReadFrame(r)
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("got %v, want bad_frame", err)
			}
		})
	}
}

func TestBadLengthAllocatesNoBody(t *testing.T) {
	for _, name := range []string{"over_max.frame", "huge_length.frame"} {
		t.Run(name, func(t *testing.T) {
			header := readFixture(t, "wire/invalid/"+name)[:HeaderSize]
			const rounds = 100
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range rounds {
				if _, err := ReadFrame(bytes.NewReader(header)); !errors.Is(err, ErrBadFrame) {
					t.Fatalf("got %v, want bad_frame", err)
				}
			}
			runtime.ReadMemStats(&after)
			// The error and its detail cost a few dozen bytes; a body would cost a MiB.
			if perRead := (after.TotalAlloc - before.TotalAlloc) / rounds; perRead > 1024 {
				t.Errorf("ReadFrame allocated %d bytes per bad frame", perRead)
			}
		})
	}
}

func TestReadFrameEnds(t *testing.T) {
	if _, err := ReadFrame(bytes.NewReader(nil)); err != io.EOF {
		t.Errorf("empty stream: got %v, want io.EOF", err)
	}
	for _, name := range []string{"truncated_header.frame", "truncated_body.frame"} {
		raw := readFixture(t, "wire/invalid/"+name)
		if _, err := ReadFrame(bytes.NewReader(raw)); err != io.ErrUnexpectedEOF {
			t.Errorf("%s: got %v, want io.ErrUnexpectedEOF", name, err)
		}
	}
}

func TestReadFrameSequence(t *testing.T) {
	var stream bytes.Buffer
	for _, p := range []string{"a", "bb", "ccc"} {
		if err := WriteFrame(&stream, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"a", "bb", "ccc"} {
		got, err := ReadFrame(&stream)
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	if _, err := ReadFrame(&stream); err != io.EOF {
		t.Fatalf("after the last frame: got %v, want io.EOF", err)
	}
}

// countingWriter counts Write calls, to show a frame goes out in one.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func TestWriteFrame(t *testing.T) {
	var w countingWriter
	if err := WriteFrame(&w, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if w.writes != 1 {
		t.Errorf("WriteFrame made %d writes, want 1", w.writes)
	}
	if got := w.Bytes(); !bytes.Equal(got, append([]byte{0, 0, 0, 7}, `{"x":1}`...)) {
		t.Errorf("wrote % x", got)
	}
	for _, size := range []int{0, MaxFrame + 1} {
		var w countingWriter
		err := WriteFrame(&w, make([]byte, size))
		if !errors.Is(err, ErrBadFrame) || w.writes != 0 {
			t.Errorf("payload of %d bytes: err %v after %d writes, want bad_frame and no write", size, err, w.writes)
		}
	}
	if err := WriteFrame(&w, make([]byte, MaxFrame)); err != nil {
		t.Errorf("payload of MaxFrame bytes refused: %v", err)
	}
}

func TestCodeOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want ErrorCode
	}{
		{nil, ""},
		{io.EOF, Internal},
		{WireError{Code: BadFrame, Detail: "frame length 0"}, BadFrame},
		{WireError{Code: BadVersion}, BadVersion},
		{errors.Join(errors.New("context"), WireError{Code: BadMessage}), BadMessage},
	} {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if errors.Is(WireError{Code: BadMessage, Detail: "x"}, ErrBadFrame) {
		t.Error("a bad_message error matches ErrBadFrame")
	}
}

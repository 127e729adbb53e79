package audit

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// faultFS writes through to real files but lets a test fail or cut short any
// write or fsync, and records every operation in order.
type faultFS struct {
	root string
	mu   sync.Mutex
	ops  []string
	// before runs ahead of each write and fsync, op being "write" or "sync"
	// and name the file's name in root ("." for root itself). An error fails
	// the call; for a write, short > 0 writes only that many bytes and
	// reports success, as a broken file system might.
	before func(op, name string) (short int, err error)
}

type faultFile struct {
	fs   *faultFS
	name string
	f    *os.File
}

func (fs *faultFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	rel, _ := filepath.Rel(fs.root, name)
	op := "open"
	if flag&os.O_CREATE != 0 {
		op = "create"
	}
	fs.log(op, rel)
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{fs: fs, name: rel, f: f}, nil
}

func (fs *faultFS) log(op, name string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.ops = append(fs.ops, op+" "+name)
}

func (fs *faultFS) hook(op, name string) (int, error) {
	fs.mu.Lock()
	before := fs.before
	fs.mu.Unlock()
	if before == nil {
		return 0, nil
	}
	return before(op, name)
}

func (fs *faultFS) setBefore(f func(op, name string) (int, error)) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.before = f
}

func (fs *faultFS) opsSoFar() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.ops)
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.log("write", f.name)
	short, err := f.fs.hook("write", f.name)
	if err != nil {
		return 0, err
	}
	if short > 0 && short < len(p) {
		return f.f.Write(p[:short])
	}
	return f.f.Write(p)
}

func (f *faultFile) Sync() error {
	f.fs.log("sync", f.name)
	_, err := f.fs.hook("sync", f.name)
	if err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *faultFile) Close() error { return f.f.Close() }

func openFaulty(t *testing.T) (*Writer, *faultFS, string) {
	dir := t.TempDir()
	fs := &faultFS{root: dir}
	w := mustOpen(t, dir, withFileSystem(fs), WithClock(fixedClock(t, "2026-09-17T08:00:00.000Z")))
	return w, fs, dir
}

// failOn fails every op on a day file with err.
func failOn(op string, err error) func(string, string) (int, error) {
	return func(o, name string) (int, error) {
		if o == op && name != "." {
			return 0, err
		}
		return 0, nil
	}
}

// wantStopped checks that the Writer refuses appends for good, although the
// fault is gone, with an error that names the first failure.
func wantStopped(t *testing.T, w *Writer, fs *faultFS, cause error) {
	t.Helper()
	fs.setBefore(nil)
	for range 2 {
		r, err := w.Append(sampleRecord(t, 99))
		if !errors.Is(err, ErrFailed) || !errors.Is(err, cause) || r.Seq != 0 {
			t.Fatalf("Append after the failure = seq %d, %v; want ErrFailed wrapping %v", r.Seq, err, cause)
		}
	}
}

func TestFailedSyncIsNeverAcknowledged(t *testing.T) {
	w, fs, dir := openFaulty(t)
	if _, err := w.Append(sampleRecord(t, 1)); err != nil {
		t.Fatal(err)
	}
	fs.setBefore(failOn("sync", syscall.EIO))
	r, err := w.Append(sampleRecord(t, 2))
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) || r.Seq != 0 {
		t.Fatalf("Append with a failing fsync = seq %d, %v; want ErrFailed wrapping EIO", r.Seq, err)
	}
	wantStopped(t, w, fs, syscall.EIO)
	if h := w.Head(); h.Seq != 1 {
		t.Errorf("Head = %v, want seq 1: record 2 never became durable", h)
	}
	// The unacknowledged record may be in the file; a new Writer carries on.
	w.Close()
	if res := openAndVerify(t, dir, "2026-09-17T09:00:00.000Z"); res.Records != 2 {
		t.Errorf("after reopening: %+v", res)
	}
}

func TestFailedWriteStopsTheWriter(t *testing.T) {
	w, fs, _ := openFaulty(t)
	fs.setBefore(failOn("write", syscall.ENOSPC))
	if _, err := w.Append(sampleRecord(t, 1)); !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrFailed) {
		t.Fatalf("Append with a failing write = %v, want ErrFailed wrapping ENOSPC", err)
	}
	wantStopped(t, w, fs, syscall.ENOSPC)
}

// A short write leaves a torn line; the Writer stops, and the next one
// recovers it.
func TestShortWriteStopsTheWriter(t *testing.T) {
	w, fs, dir := openFaulty(t)
	fs.setBefore(func(op, name string) (int, error) {
		if op == "write" {
			return 30, nil
		}
		return 0, nil
	})
	if _, err := w.Append(sampleRecord(t, 1)); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Append with a short write = %v, want io.ErrShortWrite", err)
	}
	wantStopped(t, w, fs, io.ErrShortWrite)
	if ops := fs.opsSoFar(); slices.Contains(ops, "sync "+day1) {
		t.Errorf("fsynced after a short write: %v", ops)
	}
	w.Close()
	if res := openAndVerify(t, dir, "2026-09-17T09:00:00.000Z"); res.Records != 1 || res.Torn != 1 {
		t.Errorf("after reopening: %+v, want the recovery record only", res)
	}
}

// When the first batch's fsync fails, nobody in it and nobody queued behind
// it is acknowledged, and the queued records are never even written.
func TestFailedSyncFailsTheWholeQueue(t *testing.T) {
	w, fs, _ := openFaulty(t)
	const queued = 9
	release := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock)
	fs.setBefore(func(op, name string) (int, error) {
		if op == "sync" && name != "." {
			<-release
			return 0, syscall.EIO
		}
		return 0, nil
	})
	errs := make(chan error, queued+1)
	go func() { _, err := w.Append(sampleRecord(t, 0)); errs <- err }()
	waitFor(t, func() bool { return slices.Contains(fs.opsSoFar(), "write "+day1) })
	for range queued {
		go func() { _, err := w.Append(sampleRecord(t, 1)); errs <- err }()
	}
	waitFor(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return len(w.queue) == queued })
	unblock()
	for range queued + 1 {
		if err := <-errs; !errors.Is(err, ErrFailed) {
			t.Errorf("Append = %v, want ErrFailed", err)
		}
	}
	writes := 0
	for _, op := range fs.opsSoFar() {
		if op == "write "+day1 {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("%d writes, want 1: the queued records must not be written after the failure", writes)
	}
}

// Appends that arrive while a batch is being fsynced share the next fsync.
func TestConcurrentAppendsShareFsync(t *testing.T) {
	w, fs, dir := openFaulty(t)
	const queued = 63
	release := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock)
	var once sync.Once
	fs.setBefore(func(op, name string) (int, error) {
		if op == "sync" && name != "." {
			once.Do(func() { <-release })
		}
		return 0, nil
	})
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := w.Append(sampleRecord(t, 0)); err != nil {
			t.Error(err)
		}
	})
	waitFor(t, func() bool { return slices.Contains(fs.opsSoFar(), "sync "+day1) })
	for range queued {
		wg.Go(func() {
			if _, err := w.Append(sampleRecord(t, 1)); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return len(w.queue) == queued })
	unblock()
	wg.Wait()
	syncs := 0
	for _, op := range fs.opsSoFar() {
		if op == "sync "+day1 {
			syncs++
		}
	}
	if syncs != 2 {
		t.Errorf("%d fsyncs for 64 appends, want 2 (one per batch)", syncs)
	}
	if res, err := Verify(dir); err != nil || res.Records != queued+1 {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
}

// A new day file's name is fsynced (the directory) after the file is made and
// before anything in it is acknowledged; if that fsync fails, so does the append.
func TestNewDayFileSyncsDirectory(t *testing.T) {
	w, fs, _ := openFaulty(t)
	if _, err := w.Append(sampleRecord(t, 1)); err != nil {
		t.Fatal(err)
	}
	want := []string{"open .", "create " + day1, "sync .", "write " + day1, "sync " + day1}
	if got := fs.opsSoFar(); !slices.Equal(got, want) {
		t.Errorf("operations %q, want %q", got, want)
	}

	w2, fs2, _ := openFaulty(t)
	fs2.setBefore(func(op, name string) (int, error) {
		if op == "sync" && name == "." {
			return 0, syscall.EIO
		}
		return 0, nil
	})
	if _, err := w2.Append(sampleRecord(t, 1)); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append with a failing directory fsync = %v, want ErrFailed wrapping EIO", err)
	}
	wantStopped(t, w2, fs2, syscall.EIO)
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(time.Millisecond)
	}
}

// One batch whose records straddle midnight is split: the first day's lines
// are written and fsynced, then the next day's file is made and its name
// fsynced, then the rest.
func TestBatchAcrossMidnight(t *testing.T) {
	dir := t.TempDir()
	fs := &faultFS{root: dir}
	w := mustOpen(t, dir, withFileSystem(fs), WithClock(steppingClock(t, "2026-09-17T23:59:59.990Z", 2*time.Millisecond)))
	release := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock)
	var once sync.Once
	fs.setBefore(func(op, name string) (int, error) {
		if op == "sync" && name == day1 {
			once.Do(func() { <-release })
		}
		return 0, nil
	})
	var wg sync.WaitGroup
	wg.Go(func() { w.Append(sampleRecord(t, 0)) })
	waitFor(t, func() bool { return slices.Contains(fs.opsSoFar(), "sync "+day1) })
	const queued = 10
	for range queued {
		wg.Go(func() {
			if _, err := w.Append(sampleRecord(t, 1)); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return len(w.queue) == queued })
	unblock()
	wg.Wait()
	want := []string{"open .", "create " + day1, "sync .", "write " + day1, "sync " + day1,
		"write " + day1, "sync " + day1, "create " + day2, "sync .", "write " + day2, "sync " + day2}
	if got := fs.opsSoFar(); !slices.Equal(got, want) {
		t.Errorf("operations\n%q\nwant\n%q", got, want)
	}
	if res, err := Verify(dir); err != nil || res.Records != queued+1 || res.Files != 2 {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
}

package notes

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/internal/sandbox"
	"boxmaker/wire"
)

// The label store on its own, without sandboxes: the tests play the
// sandbox by writing under memory/ between begin and finish.

// testSlack is the store's ctime slack in these tests; settle waits it out
// so that what a test prepared is older than the next call.
const testSlack = 20 * time.Millisecond

// memoryMount is where a sandbox sees memory/ (brokerd mounts it there);
// the labels go by the host paths only.
const memoryMount = "/memory"

type labelRig struct {
	t      testing.TB
	home   string
	memory string
	s      *Store
}

func newLabelRig(t testing.TB) *labelRig {
	t.Helper()
	home := t.TempDir()
	r := &labelRig{t: t, home: home, memory: filepath.Join(home, "memory")}
	if err := os.MkdirAll(filepath.Join(r.memory, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	r.open()
	return r
}

// open (re)opens the store, as a brokerd start does.
func (r *labelRig) open() {
	r.t.Helper()
	s, err := Open(r.memory, filepath.Join(r.home, "broker", "notes"), time.Now, log.New(io.Discard, "", 0))
	if err != nil {
		r.t.Fatal(err)
	}
	s.slack = testSlack
	r.s = s
}

func (r *labelRig) write(rel, text string) {
	r.t.Helper()
	p := filepath.Join(r.memory, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *labelRig) settle() { time.Sleep(3 * testSlack) }

func (r *labelRig) mount(rel string, writable bool) sandbox.Mount {
	real, err := filepath.EvalSymlinks(filepath.Join(r.memory, rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return sandbox.Mount{Host: real, Path: filepath.Join(memoryMount, rel), Writable: writable}
}

func writerAt(session string, call wire.CallID, t Label) Writer {
	id, _ := wire.ParseSessionID(session)
	return Writer{Session: id, Call: call, Base: func() (Label, error) { return t, nil }}
}

// call runs one call that had mounts, with act as its sandbox's work.
func (r *labelRig) call(who Writer, act func(), mounts ...sandbox.Mount) Result {
	r.t.Helper()
	c, err := r.s.Begin(mounts, who)
	if err != nil {
		r.t.Fatal(err)
	}
	if act != nil {
		act()
	}
	res, err := r.s.Finish(c)
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

func (r *labelRig) label(rel string) (wire.NoteLabel, bool) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	l, ok := r.s.labels[rel]
	if !ok {
		return wire.NoteLabel{}, false
	}
	return l.Label, true
}

var (
	privateTrusted  = Label{Class: wire.Private}
	secretUntrusted = Label{Class: wire.Secret, Untrusted: true}
)

// Only what the call created or changed is labelled and hashed; the owner's
// files stay unlabelled, and each other file costs a stat.
func TestLabelsWhatACallWroteAndNothingElse(t *testing.T) {
	r := newLabelRig(t)
	for i := range 50 {
		r.write(fmt.Sprintf("notes/owner-%02d.md", i), "the owner's")
	}
	r.settle()
	r.call(writerAt("w", 7, secretUntrusted), func() {
		r.write("notes/new.md", "created")
		r.write("notes/owner-03.md", "changed")
		r.write("notes/deep/er/x.md", "in new folders")
	}, r.mount("notes", true))
	if r.s.hashed != 3 {
		t.Errorf("hashed %d files, want the 3 the call wrote", r.s.hashed)
	}
	for _, p := range []string{"notes/new.md", "notes/owner-03.md", "notes/deep/er/x.md"} {
		l, ok := r.label(p)
		if !ok || l.Class != wire.Secret || !l.Untrusted || l.Session.String() != "w" || l.Call != 7 || l.SHA256 == nil {
			t.Errorf("%s: label %+v (%v)", p, l, ok)
		}
	}
	if _, ok := r.label("notes/owner-04.md"); ok {
		t.Error("an unchanged owner's file got a label")
	}
	// A second call that writes nothing hashes nothing.
	r.settle()
	before := r.s.hashed
	r.call(writerAt("w", 8, privateTrusted), nil, r.mount("notes", true))
	if r.s.hashed != before {
		t.Errorf("a call that changed nothing hashed %d files", r.s.hashed-before)
	}
	if l, _ := r.label("notes/new.md"); l.Class != wire.Secret || l.Call != 7 {
		t.Errorf("a later call that did not touch it relabelled it: %+v", l)
	}
}

// A label is the writing session's, never lower than what it could read,
// and is on disk (a restart keeps it) when finish returns.
func TestLabelsAreDurableAndSurviveARestart(t *testing.T) {
	r := newLabelRig(t)
	r.call(writerAt("w", 1, secretUntrusted), func() { r.write("notes/a.md", "x") }, r.mount("notes", true))
	r.open()
	if l, ok := r.label("notes/a.md"); !ok || l.Class != wire.Secret || !l.Untrusted {
		t.Fatalf("after a restart: %+v %v", l, ok)
	}
	files, _ := filepath.Glob(filepath.Join(r.home, "broker", "notes", "labels", "*.json"))
	if len(files) != 1 || filepath.Base(files[0]) != LabelFile("notes/a.md") {
		t.Fatalf("label files %v", files)
	}
	// A label file that does not parse stops the start: labels missing
	// would read lower.
	if err := os.WriteFile(files[0], []byte(`{"path":"notes/a.md"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(r.memory, filepath.Join(r.home, "broker", "notes"), time.Now, log.New(io.Discard, "", 0)); err == nil {
		t.Fatal("a broken label file was accepted")
	}
}

// A writer reads what is in its mount: a private session that rewrites a
// secret note leaves it secret, and its own result is secret.
func TestAWriterIsAsHighAsWhatItCouldRead(t *testing.T) {
	r := newLabelRig(t)
	r.call(writerAt("a", 1, secretUntrusted), func() { r.write("notes/s.md", "secret") }, r.mount("notes", true))
	r.settle()
	res := r.call(writerAt("b", 1, privateTrusted), func() { r.write("notes/s.md", "overwritten"); r.write("notes/t.md", "new") },
		r.mount("notes", true))
	if res.Read != secretUntrusted {
		t.Errorf("the writer read %+v, want secret untrusted", res.Read)
	}
	for _, p := range []string{"notes/s.md", "notes/t.md"} {
		if l, _ := r.label(p); l.Class != wire.Secret || !l.Untrusted || l.Session.String() != "b" {
			t.Errorf("%s: %+v", p, l)
		}
	}
}

// A file changed behind brokerd's back keeps its label, and a deleted
// file's label goes at the next walk.
func TestChangedOutsideKeepsItsLabelAndDeletedGoes(t *testing.T) {
	r := newLabelRig(t)
	r.call(writerAt("w", 1, secretUntrusted), func() { r.write("notes/a.md", "x"); r.write("notes/b.md", "y") }, r.mount("notes", true))
	r.write("notes/a.md", "the owner edited it")
	os.Remove(filepath.Join(r.memory, "notes", "b.md"))
	r.settle()
	r.call(writerAt("v", 2, privateTrusted), nil, r.mount("notes", true))
	if l, ok := r.label("notes/a.md"); !ok || l.Class != wire.Secret || l.Session.String() != "w" {
		t.Errorf("changed outside: %+v %v", l, ok)
	}
	if _, ok := r.label("notes/b.md"); ok {
		t.Error("a deleted file kept its label")
	}
	if got := r.call(writerAt("x", 1, privateTrusted), nil, r.mount("notes/a.md", false)).Read; got != secretUntrusted {
		t.Errorf("a read of the changed file is %+v", got)
	}
}

// A folder moved within the mount takes its files' labels with it: their
// ctimes do not change, their inodes do not either.
func TestAMovedFolderKeepsItsLabels(t *testing.T) {
	r := newLabelRig(t)
	r.call(writerAt("w", 1, secretUntrusted), func() { r.write("notes/sub/a.md", "x") }, r.mount("notes", true))
	r.settle()
	r.call(writerAt("v", 2, privateTrusted), func() {
		if err := os.Rename(filepath.Join(r.memory, "notes", "sub"), filepath.Join(r.memory, "notes", "moved")); err != nil {
			t.Fatal(err)
		}
	}, r.mount("notes", true))
	if l, ok := r.label("notes/moved/a.md"); !ok || l.Class != wire.Secret || !l.Untrusted {
		t.Errorf("moved: %+v %v", l, ok)
	}
	if _, ok := r.label("notes/sub/a.md"); ok {
		t.Error("the old path kept a label")
	}
}

// The walk never follows a symlink a sandbox planted: not to a file
// outside (it is not hashed or labelled) and not to a folder outside.
func TestTheWalkNeverFollowsSymlinks(t *testing.T) {
	r := newLabelRig(t)
	outside := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(outside, fmt.Sprint(i)), []byte("outside"), 0o600)
	}
	r.call(writerAt("w", 1, secretUntrusted), func() {
		os.Symlink(filepath.Join(outside, "0"), filepath.Join(r.memory, "notes", "file-link"))
		os.Symlink(outside, filepath.Join(r.memory, "notes", "dir-link"))
	}, r.mount("notes", true))
	if r.s.hashed != 0 || len(r.s.labels) != 0 {
		t.Errorf("hashed %d, labels %v: a symlink was followed", r.s.hashed, r.s.labels)
	}
	// A symlink in the path to a root is refused, not followed.
	memfd, err := r.s.openMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer closeFD(memfd)
	if err := r.s.walk(memfd, "notes/dir-link", func(int, string, string, fileStat) error { return errors.New("visited") }); err == nil || strings.Contains(err.Error(), "visited") {
		t.Errorf("walking through a symlink: %v", err)
	}
}

// A walk over its limits labels the whole folder with the writer's label,
// says so, and everything below reads at least that high.
func TestAWalkOverItsLimitsLabelsTheFolder(t *testing.T) {
	r := newLabelRig(t)
	r.s.limits = walkLimits{files: 10, depth: 3}
	c, err := r.s.Begin([]sandbox.Mount{r.mount("notes", true)}, writerAt("w", 1, secretUntrusted))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		r.write(fmt.Sprintf("notes/%d.md", i), "many")
	}
	res, err := r.s.Finish(c)
	if err != nil || !errors.Is(res.Problem, errWalkLimit) {
		t.Fatalf("finish: %v, problem %v", err, res.Problem)
	}
	if l, ok := r.label("notes"); !ok || l.Class != wire.Secret || !l.Untrusted || l.SHA256 != nil {
		t.Fatalf("folder label %+v %v", l, ok)
	}
	r.s.limits = defaultWalkLimits
	if got := r.call(writerAt("x", 1, privateTrusted), nil, r.mount("notes/3.md", false)).Read; got != secretUntrusted {
		t.Errorf("a note under the folder label reads %+v", got)
	}
	r.s.limits = walkLimits{files: 100, depth: 2}
	r.settle()
	r.call(writerAt("w", 2, privateTrusted), func() { r.write("notes/a/b/c/d.md", "deep") }, r.mount("notes", true))
	if l, _ := r.label("notes"); l.Call != 2 || l.Class != wire.Secret {
		t.Errorf("too deep: folder label %+v (it keeps the higher class)", l)
	}
}

// A writer that brokerd's death interrupted is finished at the next start:
// what changed under its roots since it began carries its label.
func TestAnInterruptedWriterIsLabelledAtTheNextStart(t *testing.T) {
	r := newLabelRig(t)
	r.write("notes/old.md", "the owner's")
	time.Sleep(Slack + 3*testSlack) // recovery runs inside open, at the default slack
	if _, err := r.s.Begin([]sandbox.Mount{r.mount("notes", true)}, writerAt("w", 3, secretUntrusted)); err != nil {
		t.Fatal(err)
	}
	r.write("notes/planted.md", "written as brokerd died")
	r.open() // no finish: brokerd was killed
	if l, ok := r.label("notes/planted.md"); !ok || l.Class != wire.Secret || l.Call != 3 {
		t.Errorf("after recovery: %+v %v", l, ok)
	}
	if _, ok := r.label("notes/old.md"); ok {
		t.Error("recovery labelled the owner's older file")
	}
	if left, _ := os.ReadDir(filepath.Join(r.home, "broker", "notes", "pending")); len(left) != 0 {
		t.Errorf("pending records left: %v", left)
	}
}

// A reader running while a writer writes is labelled with the writer's
// label, even before the writer's labels are on disk.
func TestAReaderAlongsideAWriterTakesItsLabel(t *testing.T) {
	r := newLabelRig(t)
	w, err := r.s.Begin([]sandbox.Mount{r.mount("notes", true)}, writerAt("w", 1, secretUntrusted))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := r.s.Begin([]sandbox.Mount{r.mount("notes", false)}, writerAt("r", 1, privateTrusted))
	if err != nil {
		t.Fatal(err)
	}
	r.write("notes/x.md", "secret, being written")
	if _, err := r.s.Finish(w); err != nil {
		t.Fatal(err)
	}
	res, err := r.s.Finish(rd)
	if err != nil || res.Read != secretUntrusted {
		t.Errorf("the reader read %+v (%v), want the writer's label", res.Read, err)
	}
	if len(r.s.ended) != 0 || len(r.s.running) != 0 {
		t.Errorf("calls kept after all ended: %d ended, %d running", len(r.s.ended), len(r.s.running))
	}
}

// A file whose name is not UTF-8 cannot be named in a label: its folder is
// labelled instead.
func TestANonUTF8NameLabelsTheFolder(t *testing.T) {
	r := newLabelRig(t)
	res := r.call(writerAt("w", 1, secretUntrusted), func() { r.write("notes/bad\xff.md", "x") }, r.mount("notes", true))
	if res.Problem == nil {
		t.Fatal("no problem reported")
	}
	if l, ok := r.label("notes"); !ok || l.Class != wire.Secret {
		t.Errorf("folder label %+v %v", l, ok)
	}
}

func closeFD(fd int) { os.NewFile(uintptr(fd), "").Close() }

// A writer whose session rose while it ran raises the labels another
// writer left in its folder meanwhile: the two may have written the same
// file in turn, and the other labelled it with this one's lower estimate.
func TestAWriterRaisesWhatAnotherLabelledWhileItRan(t *testing.T) {
	r := newLabelRig(t)
	rising := Label{Class: wire.Private}
	sid, _ := wire.ParseSessionID("a")
	a, err := r.s.Begin([]sandbox.Mount{r.mount("notes", true)}, Writer{Session: sid, Call: 1, Base: func() (Label, error) { return rising, nil }})
	if err != nil {
		t.Fatal(err)
	}
	r.call(writerAt("b", 1, privateTrusted), func() { r.write("notes/x.md", "both wrote this") }, r.mount("notes", true))
	if l, _ := r.label("notes/x.md"); l.Class != wire.Private {
		t.Fatalf("b's label %+v", l)
	}
	rising = secretUntrusted // a's session read a secret meanwhile
	if _, err := r.s.Finish(a); err != nil {
		t.Fatal(err)
	}
	if l, _ := r.label("notes/x.md"); l.Class != wire.Secret || !l.Untrusted || l.Session.String() != "b" {
		t.Errorf("after a ended: %+v", l)
	}
}

package notes

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"boxmaker/roles/internal/sandbox"
)

// BenchmarkNoteLabels is the labelling cost of a notes_write that touches
// one file in a folder of n files: the pending record, the walk (one
// fstatat per file), one hash, the label, and their fsyncs. It must not
// grow with n beyond the stat each unchanged file costs.
//
//	go test -run '^$' -bench NoteLabels ./roles/brokerd/internal/notes/
func BenchmarkNoteLabels(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("folder=%d", n), func(b *testing.B) {
			r := newLabelRig(b)
			for i := range n {
				r.write(fmt.Sprintf("notes/note-%05d.md", i), "a note of the owner's, some forty bytes\n")
			}
			r.settle()
			mount := []sandbox.Mount{r.mount("notes", true)}
			who := writerAt("bench", 1, secretUntrusted)
			target := filepath.Join(r.memory, "notes", "note-00042.md")
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				c, err := r.s.Begin(mount, who)
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(target, []byte("written by the call, "+strconv.Itoa(i)+"\n"), 0o600); err != nil {
					b.Fatal(err)
				}
				if _, err := r.s.Finish(c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.s.hashed)/float64(b.N), "hashed/op")
			b.ReportMetric(float64(len(r.s.labels)), "labels")
		})
	}
}

// BenchmarkNoteWalkStatOnly is the floor the labelling cost is measured
// against: the same walk over a folder of n files, one fstatat each, and
// nothing else.
func BenchmarkNoteWalkStatOnly(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("folder=%d", n), func(b *testing.B) {
			r := newLabelRig(b)
			for i := range n {
				r.write(fmt.Sprintf("notes/note-%05d.md", i), "a note of the owner's, some forty bytes\n")
			}
			memfd, err := r.s.openMemory()
			if err != nil {
				b.Fatal(err)
			}
			defer closeFD(memfd)
			b.ResetTimer()
			for b.Loop() {
				if err := r.s.walk(memfd, "notes", func(int, string, string, fileStat) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

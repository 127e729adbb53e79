//go:build linux && amd64

package toolkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles/internal/sandbox"
	"boxmaker/roles/internal/toolrun"
)

// A notes folder of the size DESIGN.md section 12 names: 10,000 notes,
// 50 MiB in all, in 100 directories, of Zipf-distributed words from a
// vocabulary of 50,000 (one word in twenty non-ASCII), in lines of about
// twelve words.
const (
	benchNotes = 10_000
	benchBytes = 50 << 20
	benchVocab = 50_000
)

// benchQueries run against that folder: a word in nearly every note (every
// note a hit), a word in a few dozen, three words of different
// frequencies, and a word in none.
var benchQueries = []struct{ name, query string }{
	{"common", vocabWord(0)},
	{"rare", vocabWord(20_000)},
	{"three-words", vocabWord(5) + " " + vocabWord(800) + " " + vocabWord(30_000)},
	{"missing", "zzzzzz"},
}

// BenchmarkNotesSearch measures notes_search over the folder in this
// process and through the real sandbox (toolkit start, Landlock, seccomp,
// the search, output back), with the median and 99th percentile of the
// runs; run it with -benchtime=100x or so for a meaningful p99. The folder
// is outside /tmp (hostDir), since the launcher refuses to mount /tmp.
func BenchmarkNotesSearch(b *testing.B) {
	memory := hostDir(b)
	notes := filepath.Join(memory, "notes")
	size := writeBenchNotes(b, notes)
	for _, q := range benchQueries {
		b.Run("in-process/"+q.name, func(b *testing.B) {
			b.SetBytes(size)
			job := toolrun.Job{Tool: "notes_search", Arguments: argsJSON(b, map[string]string{"query": q.query}),
				Mounts: []toolrun.Mount{{Path: notes}}, Limits: testLimits()}
			measure(b, func() error {
				tl := &tools{memory: memory, job: job}
				return searched(tl.run(context.Background()))
			})
		})
	}
	for _, q := range benchQueries {
		b.Run("sandbox/"+q.name, func(b *testing.B) {
			b.SetBytes(size)
			spec := toolRun{tool: "notes_search", args: map[string]string{"query": q.query},
				mounts: []sandbox.Mount{{Host: notes, Path: toolrun.MemoryDir + "/notes"}}}.spec(b)
			measure(b, func() error {
				res, err := sandbox.Run(context.Background(), spec)
				if err != nil {
					return fmt.Errorf("%w\ndiagnostics: %s", err, res.Diagnostics)
				}
				return searched(res.Output)
			})
		})
	}
}

// searched is an error unless out is a search's answer that searched all
// the notes.
func searched(out toolrun.Output) error {
	if !out.OK {
		return errors.New(out.Content)
	}
	if !strings.Contains(out.Content, fmt.Sprintf(" of %d, ", benchNotes)) &&
		!strings.Contains(out.Content, fmt.Sprintf("(%d notes searched)", benchNotes)) {
		return fmt.Errorf("not every note was searched: %.300s", out.Content)
	}
	return nil
}

// vocabWord is the word of rank i: pronounceable, distinct, one in twenty
// with an accented letter.
func vocabWord(i int) string {
	const consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
	var w []rune
	for n := i + 1; n > 0; n /= len(consonants) * len(vowels) {
		d := n % (len(consonants) * len(vowels))
		w = append(w, rune(consonants[d/len(vowels)]), rune(vowels[d%len(vowels)]))
	}
	if i%20 == 19 {
		w[1] = 'é'
	}
	if len(w) < 4 {
		w = append(w, 'x')
	}
	return string(w)
}

// writeBenchNotes writes the folder under dir and returns its size.
func writeBenchNotes(b *testing.B, dir string) int64 {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 2, benchVocab-1)
	vocab := make([]string, benchVocab)
	for i := range vocab {
		vocab[i] = vocabWord(i)
	}
	var total int64
	for i := range benchNotes {
		path := filepath.Join(dir, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("note%05d.md", i))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		// Sizes spread evenly from 512 bytes to twice the mean less that.
		want := 512 + rng.IntN(2*(benchBytes/benchNotes-512))
		for n, words := 0, 0; n < want; words++ {
			sep := " "
			if words%12 == 11 {
				sep = "\n"
			}
			k, _ := w.WriteString(vocab[zipf.Uint64()] + sep)
			n += k
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		total += fi.Size()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return total
}

// BenchmarkQueryCount measures the first pass alone, in memory: splitting
// text into words and counting the query's, over 8 MiB like the notes'.
func BenchmarkQueryCount(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 2, benchVocab-1)
	var text []byte
	for words := 0; len(text) < 8<<20; words++ {
		text = append(text, vocabWord(int(zipf.Uint64()))...)
		text = append(text, " \n"[min(words%12/11, 1)])
	}
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			parsed, err := parseQuery(q.query)
			if err != nil {
				b.Fatal(err)
			}
			var sc wordScanner
			tf := make([]int32, len(parsed.words))
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				parsed.count(&sc, text, tf)
			}
		})
	}
}

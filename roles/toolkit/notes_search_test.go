//go:build linux && amd64

package toolkit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"boxmaker/roles/internal/toolrun"
)

// shownHit is one hit line of notes_search's output.
type shownHit struct {
	score   float64
	path    string
	line    int
	passage string
}

// search writes files (path relative to memory/notes: content) and runs
// notes_search over memory/notes.
func search(t *testing.T, files map[string]string, query string) toolrun.Output {
	t.Helper()
	memory := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(memory, "notes", name), content)
	}
	return runUnconfined(t, memory, "notes_search", map[string]string{"query": query},
		toolrun.Mount{Path: filepath.Join(memory, "notes")})
}

// hitsOf parses the hit lines of a search's output.
func hitsOf(t *testing.T, out toolrun.Output) []shownHit {
	t.Helper()
	if !out.OK {
		t.Fatalf("notes_search failed: %q", out.Content)
	}
	var hits []shownHit
	for l := range strings.Lines(out.Content) {
		score, rest, ok := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
		s, err := strconv.ParseFloat(score, 64)
		if !ok || err != nil {
			continue // the header or a note in brackets
		}
		path, rest, _ := strings.Cut(rest, ":")
		line, passage, _ := strings.Cut(rest, ": ")
		n, _ := strconv.Atoi(line)
		hits = append(hits, shownHit{s, path, n, passage})
	}
	return hits
}

func pathsOf(hits []shownHit) []string {
	var paths []string
	for _, h := range hits {
		paths = append(paths, strings.TrimPrefix(h.path, "notes/"))
	}
	return paths
}

// filler is n words that no query below asks for.
func filler(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("f%d", i)
	}
	return strings.Join(w, " ")
}

func TestNotesSearchRanks(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		query string
		want  []string // the paths shown, in order
	}{
		{"a rarer word outweighs a common one", map[string]string{
			"common1.md": "meeting meeting " + filler(8), "common2.md": "meeting " + filler(9),
			"common3.md": "meeting " + filler(9), "common4.md": "meeting " + filler(9),
			"rare.md": "budget " + filler(9),
		}, "meeting budget", []string{"rare.md", "common1.md", "common2.md", "common3.md", "common4.md"}},
		// Counted linearly, twenty alphas would score ten times the rest.
		{"term frequency saturates", map[string]string{
			"many.md": strings.Repeat("alpha ", 20) + filler(2), "both.md": "alpha beta " + filler(20),
			"none1.md": filler(22), "none2.md": filler(22), "none3.md": filler(22),
		}, "alpha beta", []string{"both.md", "many.md"}},
		{"a shorter note wins at equal counts", map[string]string{
			"long.md": "cat " + filler(40), "short.md": "cat " + filler(3), "mid.md": "cat " + filler(10),
		}, "cat", []string{"short.md", "mid.md", "long.md"}},
		{"notes with more of the words first", map[string]string{
			"red.md": "red " + filler(5), "apple.md": "apple " + filler(5),
			"both.md": "a red apple " + filler(4), "neither.md": filler(6),
		}, "Red apple!", []string{"both.md", "apple.md", "red.md"}},
		{"equal scores by path", map[string]string{
			"b.md": "same words", "a.md": "same words", "c/a.md": "same words",
		}, "words", []string{"a.md", "b.md", "c/a.md"}},
		{"non-ASCII words, case folded", map[string]string{
			"u.md": "Ärger über alles", "U2.md": "ÜBER den Wolken " + filler(5), "x.md": "uber eats",
		}, "über", []string{"u.md", "U2.md"}},
		{"unspaced scripts by character", map[string]string{
			"tokyo.md": "東京に行く", "kyoto.md": "京都に行きたい", "latin.md": "Tokyo",
		}, "東京", []string{"tokyo.md", "kyoto.md"}},
		{"no stemming", map[string]string{
			"plural.md": "notes", "singular.md": "note",
		}, "note", []string{"singular.md"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := search(t, c.files, c.query)
			hits := hitsOf(t, out)
			if got := pathsOf(hits); !slices.Equal(got, c.want) {
				t.Fatalf("ranked %q, want %q\n%s", got, c.want, out.Content)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].score > hits[i-1].score {
					t.Fatalf("scores out of order:\n%s", out.Content)
				}
			}
		})
	}
}

func TestNotesSearchOutput(t *testing.T) {
	out := search(t, map[string]string{
		"todo.md":      "# Todo\n- buy milk\n- call Alice about the budget\n",
		"a/meeting.md": "Met Alice.\nWe talked.\n",
		"other.md":     "nothing to see\n",
	}, "alice budget")
	// N = 3, avgdl = 15/3; IDF(alice) = ln 1.6, IDF(budget) = ln(8/3). todo.md
	// has 8 words: (0.470+0.981)*2.2/(1+1.2*(0.25+0.75*8/5)) = 1.165.
	// meeting.md has 4: 0.470*2.2/(1+1.2*(0.25+0.75*4/5)) = 0.512.
	want := "notes matching \"alice budget\": 2 of 3, best first (score path:line: passage)\n" +
		"1.16 notes/todo.md:3: - call Alice about the budget\n" +
		"0.512 notes/a/meeting.md:1: Met Alice.\n"
	if !out.OK || out.Content != want {
		t.Fatalf("notes_search = %+v\nwant %q", out, want)
	}
}

func TestNotesSearchRefusesEmptyQueries(t *testing.T) {
	for _, q := range []string{"", " \t\n", "?!", "... --- ...", "🙂"} {
		out := search(t, map[string]string{"a.md": "text"}, q)
		if out.OK || !strings.Contains(out.Content, "notes_search: the query has no words") {
			t.Errorf("query %q: %+v", q, out)
		}
	}
}

func TestNotesSearchCaps(t *testing.T) {
	t.Run("hits", func(t *testing.T) {
		files := map[string]string{}
		for i := range 30 {
			files[fmt.Sprintf("n%02d.md", i)] = "word " + filler(i)
		}
		out := search(t, files, "word")
		hits := hitsOf(t, out)
		if len(hits) != maxHits || hits[0].path != "notes/n00.md" || hits[maxHits-1].path != "notes/n19.md" ||
			!strings.HasSuffix(out.Content, "[the best 20 of 30 matching notes shown]\n") {
			t.Fatalf("%d hits:\n%s", len(hits), out.Content)
		}
	})
	t.Run("output", func(t *testing.T) {
		files := map[string]string{}
		long := strings.Repeat("d", 200)
		for i := range maxHits {
			name := filepath.Join(long, long, long, fmt.Sprintf("%s%02d.md", long, i))
			files[name] = "word " + strings.Repeat("x", 400)
		}
		out := search(t, files, "word")
		hits := hitsOf(t, out)
		if len(out.Content) > maxSearchOutput+100 || len(hits) >= maxHits ||
			!strings.HasSuffix(out.Content, fmt.Sprintf("[the best %d of %d matching notes shown]\n", len(hits), maxHits)) {
			t.Fatalf("%d bytes, %d hits, ending %q", len(out.Content), len(hits), out.Content[len(out.Content)-60:])
		}
	})
	t.Run("skipped files", func(t *testing.T) {
		big := "word " + strings.Repeat("x", maxSearchFile)
		out := search(t, map[string]string{
			"big.md":      big,
			"bin.dat":     "word\x00word",
			"late.md":     strings.Repeat("y ", binarySniff) + "word\x00",
			"edge.md":     "word " + strings.Repeat("x", maxSearchFile-5),
			"ordinary.md": "word",
		}, "word")
		if got := pathsOf(hitsOf(t, out)); !slices.Equal(got, []string{"ordinary.md", "edge.md", "late.md"}) ||
			!strings.HasSuffix(out.Content, "[not searched: 1 file over 4 MiB, 1 binary file]\n") {
			t.Fatalf("notes_search:\n%s", out.Content)
		}
	})
}

func TestNotesSearchFiles(t *testing.T) {
	memory, outside := t.TempDir(), t.TempDir()
	notes := filepath.Join(memory, "notes")
	writeFile(t, filepath.Join(notes, "a", "x.md"), "shared word")
	writeFile(t, filepath.Join(notes, "b.md"), "shared")
	writeFile(t, filepath.Join(notes, "odd\nname.md"), "shared")
	writeFile(t, filepath.Join(outside, "secret.md"), "shared hunter2")
	writeFile(t, filepath.Join(memory, "private.md"), "shared private")
	if err := os.Symlink(outside, filepath.Join(notes, "linked")); err != nil {
		t.Fatal(err)
	}
	// Overlapping mounts and a mount that is one file: each file once.
	mounts := []toolrun.Mount{{Path: filepath.Join(notes, "a")}, {Path: notes}, {Path: filepath.Join(notes, "b.md")}}
	out := runUnconfined(t, memory, "notes_search", map[string]string{"query": "shared hunter2"}, mounts...)
	hits := hitsOf(t, out)
	want := []string{"notes/b.md", `"notes/odd\nname.md"`, "notes/a/x.md"}
	if got := []string{hits[0].path, hits[1].path, hits[2].path}; len(hits) != 3 || !slices.Equal(got, want) ||
		!strings.Contains(out.Content, ": 3 of 3,") || strings.Contains(out.Content, "hunter2\n") {
		t.Fatalf("notes_search:\n%s", out.Content)
	}
	out = runUnconfined(t, memory, "notes_search", map[string]string{"query": "private"}, mounts...)
	if !out.OK || out.Content != `no notes contain any word of "private" (3 notes searched)` {
		t.Fatalf("notes_search outside its mounts: %+v", out)
	}
}

func TestSearchRoots(t *testing.T) {
	mounts := func(paths ...string) []toolrun.Mount {
		var ms []toolrun.Mount
		for _, p := range paths {
			ms = append(ms, toolrun.Mount{Path: p})
		}
		return ms
	}
	cases := []struct {
		mounts []toolrun.Mount
		want   []string
	}{
		{mounts("/memory/notes/a", "/memory/notes-old", "/memory/notes", "/memory/notes/"),
			[]string{"/memory/notes", "/memory/notes-old"}},
		{mounts("/memory/b.md", "/memory/a", "/docs", "/memoryx/c"), []string{"/memory/a", "/memory/b.md"}},
		{mounts("/memory/x", "/memory"), []string{"/memory"}},
		{nil, nil},
	}
	for _, c := range cases {
		if got := searchRoots("/memory", c.mounts); !slices.Equal(got, c.want) {
			t.Errorf("searchRoots(%v) = %q, want %q", c.mounts, got, c.want)
		}
	}
}

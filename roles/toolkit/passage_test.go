package toolkit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// passageFor ranks nothing: it takes the query words' IDF as given.
func passageFor(t *testing.T, query string, idf []float64, text string) (int, string) {
	t.Helper()
	q, err := parseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	var sc wordScanner
	return passage(&q, idf, []byte(text), &sc)
}

func TestPassageChoosesTheLine(t *testing.T) {
	cases := []struct {
		name  string
		query string
		idf   []float64
		text  string
		line  int
		want  string
	}{
		{"the rarer word's line", "meeting budget", []float64{0.2, 2},
			"meeting meeting meeting\n  the budget, again \nmeeting\n", 2, "the budget, again"},
		{"both words over either", "meeting budget", []float64{0.2, 2},
			"budget\nmeeting and budget\nbudget budget\n", 2, "meeting and budget"},
		{"more matches on a tie", "tea", []float64{1},
			"tea\ntea and more tea\n", 2, "tea and more tea"},
		{"the earlier line on a tie", "tea", []float64{1},
			"green tea\nblack tea\n", 1, "green tea"},
		{"no final newline, CRLF", "end", []float64{1},
			"first\r\nat the end", 2, "at the end"},
		{"controls become spaces", "bell", []float64{1},
			"a bell\x07rang\rhere\u2028too\n", 1, "a bell rang here too"},
		{"no line matches", "absent", []float64{1}, "text\n", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line, got := passageFor(t, c.query, c.idf, c.text)
			if line != c.line || got != c.want {
				t.Fatalf("passage = %d %q, want %d %q", line, got, c.line, c.want)
			}
		})
	}
}

func TestPassageWindow(t *testing.T) {
	filler := func(word string, n int) string { return strings.Repeat(word+" ", n) }
	cases := []struct {
		name  string
		query string
		idf   []float64
		line  string
		want  []string // in the passage
		not   []string // not in it
	}{
		{"around a match in the middle", "needle", []float64{1},
			filler("hay", 200) + "needle " + filler("hay", 200), []string{"needle"}, nil},
		{"the densest cluster", "alpha beta", []float64{1, 1},
			"alpha " + filler("hay", 100) + "beta alpha here " + filler("hay", 100), []string{"beta alpha here"}, nil},
		{"the heavier word over more matches", "common rare", []float64{0.1, 3},
			filler("common", 30) + filler("hay", 100) + "the rare one " + filler("hay", 100), []string{"the rare one"}, []string{"common"}},
		{"multi-byte text", "ключ", []float64{1},
			filler("слово", 100) + "ключ " + filler("слово", 100), []string{"ключ"}, nil},
		{"CJK without spaces", "鍵", []float64{1},
			strings.Repeat("文字", 200) + "鍵" + strings.Repeat("文字", 200), []string{"鍵"}, nil},
		{"a match at the start", "first", []float64{1},
			"first " + filler("hay", 200), []string{"first"}, nil},
		{"a match at the end", "last", []float64{1},
			filler("hay", 200) + "last", []string{"last"}, nil},
		{"long words around the match", "needle", []float64{1},
			strings.Repeat("x", 300) + " needle " + strings.Repeat("y", 300), []string{"xxx needle yyy"}, nil},
		{"one word longer than the passage", strings.Repeat("x", 300), []float64{1},
			"a " + strings.Repeat("x", 300) + " b", []string{"xxx"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line, got := passageFor(t, c.query, c.idf, c.line+"\n")
			if line != 1 || len(got) > maxPassage || !utf8.ValidString(got) {
				t.Fatalf("passage = %d %q (%d bytes), want line 1, valid UTF-8, at most %d bytes", line, got, len(got), maxPassage)
			}
			if len(got) < maxPassage-20 {
				t.Errorf("passage of %d bytes wastes its room: %q", len(got), got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("passage %q lacks %q", got, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(got, w) {
					t.Errorf("passage %q holds %q", got, w)
				}
			}
			trimmed := strings.TrimSuffix(strings.TrimPrefix(got, cutMark), cutMark)
			if strings.HasPrefix(c.line, trimmed) != !strings.HasPrefix(got, cutMark) {
				t.Errorf("passage %q marks its start wrongly", got)
			}
			if strings.HasSuffix(strings.TrimSpace(c.line), trimmed) != !strings.HasSuffix(got, cutMark) {
				t.Errorf("passage %q marks its end wrongly", got)
			}
		})
	}
}

// FuzzPassage checks a passage's bounds whatever the note holds: at most
// maxPassage bytes, on one line, valid UTF-8, from a line that matches.
func FuzzPassage(f *testing.F) {
	f.Add("alpha beta", "x alpha\ny beta alpha "+strings.Repeat("é ", 150)+"beta\n")
	f.Add("鍵", strings.Repeat("文字", 200)+"鍵\r\n")
	f.Add("a", "\xff\xfea\x00\n a")
	f.Add("AlphA", "0 AlphA"+strings.Repeat("\xa9", 68)+"00") // U+FFFD for each byte: 3 times as long
	f.Fuzz(func(t *testing.T, query, text string) {
		q, err := parseQuery(query)
		if err != nil {
			return
		}
		idf := make([]float64, len(q.words))
		for i := range idf {
			idf[i] = float64(i%3) + 0.5
		}
		var sc wordScanner
		n, p := passage(&q, idf, []byte(text), &sc)
		if len(p) > maxPassage || strings.ContainsAny(p, "\n\r") || !utf8.ValidString(p) {
			t.Fatalf("passage %d %q (%d bytes)", n, p, len(p))
		}
		if lines := strings.Split(text, "\n"); n < 0 || n > len(lines) || (n == 0) != (p == "") {
			t.Fatalf("passage from line %d of %d: %q", n, len(lines), p)
		}
	})
}

package toolkit

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func words(text string) []string {
	var sc wordScanner
	sc.reset([]byte(text))
	var out []string
	for sc.next() {
		if got := text[sc.start:sc.end]; !strings.EqualFold(got, string(sc.word())) {
			panic("the span " + got + " is not the word " + string(sc.word()))
		}
		out = append(out, string(sc.word()))
	}
	return out
}

func TestWords(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"  x2 3.14 foo_bar e-mail  ", []string{"x2", "3", "14", "foo", "bar", "e", "mail"}},
		{"naïve CAFÉ Straße", []string{"naïve", "café", "straße"}},
		{"nai\u0308ve", []string{"nai\u0308ve"}}, // a combining mark stays in its word
		{"МОСКВА, Київ", []string{"москва", "київ"}},
		{"東京に行く", []string{"東", "京", "に", "行", "く"}},
		{"abc東京def", []string{"abc", "東", "京", "def"}},
		{"서울 특별시", []string{"서울", "특별시"}},
		{"٣٤ مرحبا", []string{"٣٤", "مرحبا"}},
		{"a\x00b\xffc\u00a0d", []string{"a", "b", "c", "d"}}, // NUL, invalid UTF-8, no-break space
		{"emoji🙂here", []string{"emoji", "here"}},
	}
	for _, c := range cases {
		if got := words(c.text); !slices.Equal(got, c.want) {
			t.Errorf("words(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestParseQuery(t *testing.T) {
	q, err := parseQuery("Budget, budget; BUDGET meeting")
	if err != nil || !slices.Equal(q.words, []string{"budget", "meeting"}) {
		t.Fatalf("parseQuery = %q, %v", q.words, err)
	}
	for text, want := range map[string]int{"Meeting": 1, "BUDGET": 0, "meetin": -1, "budgets": -1, "ßudget": -1, "mééting": -1} {
		var sc wordScanner
		if sc.reset([]byte(text)); !sc.next() || q.lookup(&sc) != want {
			t.Errorf("lookup(%q) = %d, want %d", text, q.lookup(&sc), want)
		}
	}
	for _, empty := range []string{"", "   ", "?!…", "— -- ::", "\x00\xff"} {
		if _, err := parseQuery(empty); !errors.Is(err, errNoWords) {
			t.Errorf("parseQuery(%q) = %v, want errNoWords", empty, err)
		}
	}
	many := strings.Repeat("w ", 40) // one distinct word
	if _, err := parseQuery(many); err != nil {
		t.Errorf("40 repeats of one word: %v", err)
	}
	var distinct []string
	for i := range maxQueryWords + 1 {
		distinct = append(distinct, "w"+strings.Repeat("x", i))
	}
	if _, err := parseQuery(strings.Join(distinct, " ")); err == nil || !strings.Contains(err.Error(), "more than 32") {
		t.Errorf("%d distinct words: %v", len(distinct), err)
	}
}

// TestBM25Score checks the formula's properties on a corpus of 100 notes
// of 50 words on average.
func TestBM25Score(t *testing.T) {
	c := corpus{notes: 100, words: 5000, df: []int{2, 60}} // a rare word, a common one
	idf := c.idf()
	score := func(rare, common int32, length int) float64 {
		return c.score(idf, []int32{rare, common}, length)
	}
	if !(idf[0] > idf[1] && idf[1] > 0) {
		t.Fatalf("idf = %v: want the rare word first and both positive", idf)
	}
	if rare, common := score(1, 0, 50), score(0, 3, 50); rare <= common {
		t.Errorf("one rare word scores %.3f, three common ones %.3f", rare, common)
	}
	one, ten, hundred, thousand := score(1, 0, 50), score(10, 0, 50), score(100, 0, 50), score(1000, 0, 50)
	if !(one < ten && ten < hundred && hundred < thousand) {
		t.Errorf("more occurrences must score more: %.3f %.3f %.3f %.3f", one, ten, hundred, thousand)
	}
	if limit := (bm25K1 + 1) * idf[0]; thousand >= limit || ten > 2*one {
		t.Errorf("term frequency does not saturate: 1: %.3f, 10: %.3f, 1000: %.3f, limit %.3f", one, ten, thousand, limit)
	}
	if short, long := score(1, 1, 10), score(1, 1, 200); short <= long {
		t.Errorf("at equal counts a note of 10 words scores %.3f, one of 200 %.3f", short, long)
	}
	// With length equal to the average, one occurrence scores exactly IDF.
	if got := score(1, 0, 50); math.Abs(got-idf[0]) > 1e-12 {
		t.Errorf("score = %v, want idf %v", got, idf[0])
	}
	if got := (&corpus{}).score(nil, nil, 0); got != 0 {
		t.Errorf("an empty corpus scores %v", got)
	}
}

// FuzzCount checks that count, which splits ASCII itself, finds the words
// wordScanner finds alone.
func FuzzCount(f *testing.F) {
	for _, seed := range [][2]string{
		{"cafe café", "Café cafe CAFE café, cafés caféx xcafé"},
		{"tokyo 東京", "tokyo東京tokyo 東 京東京 Tokyo"},
		{"a b", "a\xffb a\x00b a—b a\u0301b ab"},
		{"straße k", "STRASSE Straße \u212a k K"},
		{"x", ""},
		{"end", "the end"},
		{"über", "über"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, query, text string) {
		q, err := parseQuery(query)
		if err != nil {
			return
		}
		var sc wordScanner
		want, wantTF := 0, make([]int32, len(q.words))
		sc.reset([]byte(text))
		for sc.next() {
			want++
			if k := q.lookup(&sc); k >= 0 {
				wantTF[k]++
			}
		}
		tf := make([]int32, len(q.words))
		if got := q.count(&sc, []byte(text), tf); got != want || !slices.Equal(tf, wantTF) {
			t.Fatalf("count(%q) in %q = %d %v, want %d %v", query, text, got, tf, want, wantTF)
		}
	})
}

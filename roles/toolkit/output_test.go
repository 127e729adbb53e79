package toolkit

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"boxmaker/roles/internal/toolrun"
)

func TestEncodeFitted(t *testing.T) {
	cases := []struct {
		name    string
		content string
		limit   int64
	}{
		{"fits", "short", 100},
		{"ascii", strings.Repeat("a", 5000), 1000},
		{"escapes", strings.Repeat("\x01\"", 3000), 1000},
		{"multibyte", strings.Repeat("é漢🙂", 2000), 1000},
		{"invalid utf8", "ok\xff\xfe" + strings.Repeat("b", 3000), 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := encodeFitted(toolrun.Output{OK: true, Content: c.content}, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(data)) > c.limit {
				t.Fatalf("%d bytes, over the limit of %d", len(data), c.limit)
			}
			out, err := toolrun.DecodeOutput(data)
			if err != nil || !out.OK || !utf8.ValidString(out.Content) {
				t.Fatalf("decoded %+v, %v", out, err)
			}
			cut := strings.HasSuffix(out.Content, "[boxmaker: output cut to fit "+strconv.FormatInt(c.limit, 10)+" bytes]")
			if cut == (out.Content == c.content) {
				t.Fatalf("cut=%v for content %q", cut, prefix(out.Content, 80))
			}
			if int64(len(data)) < c.limit/2 && cut {
				t.Fatalf("cut to %d bytes, far below the limit of %d", len(data), c.limit)
			}
		})
	}
	if _, err := encodeFitted(toolrun.Output{Content: strings.Repeat("x", 100)}, 20); err == nil {
		t.Fatal("a limit too small for any output gave no error")
	}
}

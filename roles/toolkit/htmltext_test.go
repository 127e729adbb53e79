package toolkit

import (
	"net/url"
	"strings"
	"testing"
)

func TestHTMLText(t *testing.T) {
	base, _ := url.Parse("https://example.test/dir/page")
	cases := []struct{ name, html, want string }{
		{"whitespace collapses", "<p>a \n\t b</p><p>c</p>", "a b\n\nc\n"},
		{"hidden elements", "<style>p{}</style><p>seen<script>var x='<p>no</p>'</script></p><svg><text>no</text></svg><noscript>no</noscript>", "seen\n"},
		{"pre keeps its lines", "<pre>a\n  b</pre><p>c</p>", "a\n  b\n\nc\n"},
		{"links", `<a href="x">rel</a> <a href="javascript:alert(1)">js</a> <a href="mailto:a@b">m</a>`, "rel <https://example.test/dir/x> js m\n"},
		{"inline stays inline", "one<b>two</b> <i>three</i>", "onetwo three\n"},
		{"line breaks", "a<br>b<br/>c", "a\nb\nc\n"},
		{"headings", "<h2>Sub</h2>text", "## Sub\n\ntext\n"},
		{"malformed", "<p>open <div>and <b>never closed", "open\n\nand never closed\n"},
		{"list items", "<ul><li> a </li><li>b\n</li></ul>", "- a\n- b\n"},
		{"table rows", "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "ab\nc\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := htmlText(strings.NewReader(c.html), base)
			if err != nil || got != c.want {
				t.Fatalf("htmlText(%q) = %q, %v; want %q", c.html, got, err, c.want)
			}
		})
	}
}

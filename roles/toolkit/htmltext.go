package toolkit

import (
	"errors"
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// hidden elements hold nothing a reader sees.
var hidden = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Iframe: true, atom.Object: true, atom.Canvas: true,
}

// blocks stand apart, with a blank line before and after.
var blocks = map[atom.Atom]bool{
	atom.Title: true, atom.P: true, atom.Div: true, atom.Ul: true, atom.Ol: true,
	atom.Table: true, atom.Section: true, atom.Article: true, atom.Header: true,
	atom.Footer: true, atom.Nav: true, atom.Main: true, atom.Aside: true, atom.Blockquote: true,
	atom.Pre: true, atom.Hr: true, atom.Dl: true, atom.Form: true,
	atom.Figure: true, atom.Figcaption: true, atom.Address: true, atom.Details: true, atom.Summary: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

// lines start and end on a line of their own.
var lines = map[atom.Atom]bool{atom.Li: true, atom.Tr: true, atom.Dt: true, atom.Dd: true}

// headings are written with markdown's marks, so their rank survives.
var headings = map[atom.Atom]string{
	atom.H1: "# ", atom.H2: "## ", atom.H3: "### ", atom.H4: "#### ", atom.H5: "##### ", atom.H6: "###### ",
}

// htmlText renders an HTML page as plain text a model can read: the text
// of visible elements, blocks on their own lines, list items and headings
// marked as in markdown, each link's target after its text. It tokenizes
// and never runs anything; malformed HTML gives what text it has.
func htmlText(r io.Reader, base *url.URL) (string, error) {
	z := html.NewTokenizer(r)
	var w textBuilder
	hiddenDepth, preDepth := 0, 0
	var href string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if errors.Is(z.Err(), io.EOF) {
				return strings.TrimSpace(w.b.String()) + "\n", nil
			}
			return "", z.Err()
		case html.TextToken:
			if hiddenDepth == 0 {
				w.text(string(z.Text()), preDepth > 0)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			switch {
			case hidden[a] && tt == html.StartTagToken:
				hiddenDepth++
			case a == atom.Pre:
				preDepth++
			case a == atom.A && hasAttr:
				href = linkTarget(z, base)
			}
			w.open(a)
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case hidden[a] && hiddenDepth > 0:
				hiddenDepth--
			case a == atom.Pre && preDepth > 0:
				preDepth--
			case a == atom.A && href != "":
				w.text(" <"+href+">", false)
				href = ""
			}
			w.close(a)
		}
	}
}

// linkTarget is the absolute http(s) target of the <a> tag being read.
func linkTarget(z *html.Tokenizer, base *url.URL) string {
	for {
		key, val, more := z.TagAttr()
		if string(key) == "href" {
			u, err := base.Parse(strings.TrimSpace(string(val)))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				return ""
			}
			return u.String()
		}
		if !more {
			return ""
		}
	}
}

// textBuilder collapses whitespace the way a browser does and keeps at
// most one blank line between blocks.
type textBuilder struct {
	b        strings.Builder
	space    bool // a space is due before the next word
	newlines int  // line breaks due before the next word
}

func (w *textBuilder) open(a atom.Atom) {
	switch {
	case a == atom.Br, lines[a] && a != atom.Li:
		w.lineBreak(1)
	case a == atom.Li:
		w.lineBreak(1)
		w.text("- ", true)
	case headings[a] != "":
		w.lineBreak(2)
		w.text(headings[a], true)
	case blocks[a]:
		w.lineBreak(2)
	}
}

func (w *textBuilder) close(a atom.Atom) {
	switch {
	case blocks[a]:
		w.lineBreak(2)
	case lines[a]:
		w.lineBreak(1)
	}
}

func (w *textBuilder) lineBreak(n int) {
	w.newlines = max(w.newlines, n)
	w.space = false
}

// text writes s; unless pre, runs of whitespace become one space.
func (w *textBuilder) text(s string, pre bool) {
	if pre {
		w.flush()
		w.b.WriteString(s)
		return
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		w.space = w.space || (s != "" && w.newlines == 0)
		return
	}
	if s[0] == ' ' || s[0] == '\n' || s[0] == '\t' || s[0] == '\r' {
		w.space = w.newlines == 0
	}
	for i, word := range words {
		if i > 0 {
			w.space = true
		}
		w.flush()
		w.b.WriteString(word)
	}
	last := s[len(s)-1]
	w.space = last == ' ' || last == '\n' || last == '\t' || last == '\r'
}

// flush writes the breaks or the space that are due, never at the start.
func (w *textBuilder) flush() {
	switch {
	case w.b.Len() == 0:
	case w.newlines > 0:
		w.b.WriteString(strings.Repeat("\n", w.newlines))
	case w.space && !strings.HasSuffix(w.b.String(), " "):
		w.b.WriteByte(' ')
	}
	w.newlines, w.space = 0, false
}

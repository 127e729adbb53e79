package gatewayd

import (
	"strings"
	"unicode/utf8"
)

// What the model, a tool or loopd wrote reaches Mattermost only quoted as
// code: a fenced block for a reply, a code span for a one-line field (a
// tool's outcome, an error, an approval's subject). Code is the one
// Markdown construct whose content no renderer parses, neither the web
// and mobile clients nor the server when it looks for links to preview:
// inside it an image, a link, an autolink, a bare URL, HTML or an entity
// is text, so no client and no server fetches anything a reply names.
// This is a construction, not a filter: nothing in the text is looked for.
// What keeps it sound:
//   - a fence or delimiter longer than any run of backticks inside, so that
//     the text cannot end its quote early (codeBlock, codeSpan);
//   - a code span holds one line, since a line break would let a heading or
//     a fence interrupt the paragraph the span is in (oneLine, codeSpan);
//   - no emphasis of ours around a quote: a renderer that matches emphasis
//     before code spans could end the emphasis inside the quote;
//   - a post is cut between quotes, never inside one: each post's block
//     has its own fence (quotedPosts), since a half block would leave the
//     rest of the text outside any quote.
// Every post gatewayd makes also carries the unsafe_links prop (the
// mattermost client), with which the server marks posts whose links it
// must not preview or embed.

// quotedPosts lays out head (gatewayd's Markdown), text (quoted in a
// block) and tail (gatewayd's Markdown) as posts of at most maxPostRunes:
// head before the first block, tail after the last, the text cut at line
// breaks where it can be.
func quotedPosts(head, text, tail string) []string {
	var posts []string
	if head != "" {
		heads := ownPosts(head)
		posts = append(posts, heads[:len(heads)-1]...)
		head = heads[len(heads)-1] + "\n\n"
	}
	if tail != "" {
		tail = "\n\n" + tail
	}
	for {
		room := maxPostRunes - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
		chunk, rest := cutQuote(text, room)
		post := head + codeBlock(chunk)
		head = ""
		if rest == "" {
			return append(posts, post+tail)
		}
		posts = append(posts, post)
		text = rest
	}
}

// blockFrame is what codeBlock adds besides its fences: "text" and two
// line breaks.
const blockFrame = len("text\n\n")

// cutQuote is the longest start of text whose block fits in room runes
// (at least one rune), and the rest.
func cutQuote(text string, room int) (string, string) {
	n := room - blockFrame - 6
	for {
		chunk := cutAt(text, max(n, 1))
		fence := max(3, longestRun(chunk, '`')+1)
		if utf8.RuneCountInString(chunk)+2*fence+blockFrame <= room || n <= 1 {
			return chunk, text[len(chunk):]
		}
		n = min(n-1, room-blockFrame-2*fence) // shorter each time: it ends
	}
}

// cutAt is the start of s of at most n runes, ending after a line break
// when one is in its second half.
func cutAt(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := len(string([]rune(s)[:n]))
	if nl := strings.LastIndexByte(s[:cut], '\n'); nl > cut/2 {
		cut = nl + 1
	}
	return s[:cut]
}

// ownPosts cuts gatewayd's own Markdown (lines of which no quote spans a
// line break) into posts at line breaks, so that no quote is cut.
func ownPosts(s string) []string {
	var posts []string
	var b strings.Builder
	for line := range strings.Lines(s) {
		if b.Len() > 0 && utf8.RuneCountInString(b.String())+utf8.RuneCountInString(line) > maxPostRunes {
			posts = append(posts, strings.TrimSuffix(b.String(), "\n"))
			b.Reset()
		}
		b.WriteString(line)
	}
	return append(posts, strings.TrimSuffix(b.String(), "\n"))
}

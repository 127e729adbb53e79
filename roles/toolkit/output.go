package toolkit

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"boxmaker/roles/internal/toolrun"
)

// encodeFitted encodes o so that it fits in limit bytes: content that would
// not fit is cut on a character boundary and ends with a note that says so,
// because brokerd kills a run whose stdout passes the limit. Invalid UTF-8
// (a binary shell output, a page in a wrong charset) becomes U+FFFD, since
// the codec refuses it.
func encodeFitted(o toolrun.Output, limit int64) ([]byte, error) {
	o.Content = strings.ToValidUTF8(o.Content, "\uFFFD")
	whole, keep := o.Content, len(o.Content)
	note := fmt.Sprintf("\n[boxmaker: output cut to fit %d bytes]", limit)
	for {
		data, err := toolrun.EncodeOutput(o)
		if err != nil || int64(len(data)) <= limit {
			return data, err
		}
		if keep == 0 {
			return nil, errors.New("the output limit is too small for any output")
		}
		// Shrink in proportion to the excess, since escaping makes some
		// bytes cost six; each round keeps strictly less.
		keep = min(keep-1, int(int64(keep)*limit/int64(len(data))))
		o.Content = prefix(whole, keep) + note
	}
}

// prefix is s cut to at most n bytes without splitting a character.
func prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

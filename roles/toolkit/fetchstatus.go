package toolkit

import (
	"fmt"
	"net/http"
	"strings"
)

// egressErrorHeader marks an answer egressd wrote itself (it drops the
// header from every upstream's answer, so an upstream cannot forge it).
const egressErrorHeader = "X-Boxmaker-Error"

// statusReason says why a request through egressd did not succeed. When
// egressd answered for itself (the name did not resolve, nothing answered,
// the grant refused the URL) the first line of its body is the reason the
// owner and the model need; a bare status would hide it in egressd's log.
func statusReason(resp *http.Response, body []byte) string {
	if resp.Header.Get(egressErrorHeader) != "" {
		line, _, _ := strings.Cut(string(body), "\n")
		if line = strings.TrimSpace(line); line != "" {
			return "egressd: " + shortened(line, 300)
		}
	}
	return fmt.Sprintf("status %d", resp.StatusCode)
}

// shortened cuts s to at most n bytes on a character boundary.
func shortened(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

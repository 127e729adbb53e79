package wire

import (
	"errors"
	"strings"
)

// EgressMcpOpen hands egressd one end of a socketpair (as SCM_RIGHTS beside
// the frame) that is a remote MCP server's channel (DESIGN.md section 16):
// for the instance's life the sandbox sends, on that channel, one end of a
// fresh socketpair per HTTP connection it wants, and egressd serves each as
// an exchange with URL's origin and path only, adding Authorization.
// egressd answers egress_ready.
type EgressMcpOpen struct {
	URL McpURL `json:"url"` // [mcp.NAME] url, as config.toml checked it
	// Authorization is the header value egressd adds to every request
	// ("Bearer " and the server's secret), or null: the secret never
	// enters the sandbox.
	Authorization *string `json:"authorization"`
}

// McpURL is a remote MCP server's endpoint: http:// or https:// and at
// most MaxMcpURL bytes of printable ASCII. config.toml's checks (origin
// forms, IP literals for http) are egressd's to repeat, not the wire's.
type McpURL string

// MaxMcpURL is the longest endpoint URL, in bytes.
const MaxMcpURL = 2048

func (u McpURL) MarshalText() ([]byte, error) { return []byte(u), checkMcpURL(string(u)) }

func (u *McpURL) UnmarshalText(b []byte) error {
	if err := checkMcpURL(string(b)); err != nil {
		return err
	}
	*u = McpURL(b)
	return nil
}

func checkMcpURL(s string) error {
	if len(s) > MaxMcpURL {
		return errors.New("MCP url: over 2048 bytes")
	}
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		return errors.New("MCP url: not http:// or https://")
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return errors.New("MCP url: only printable ASCII without spaces")
		}
	}
	return nil
}

func (EgressMcpOpen) isMessage() {}

// Check reports whether u is a URL the wire carries.
func (u McpURL) Check() error { return checkMcpURL(string(u)) }

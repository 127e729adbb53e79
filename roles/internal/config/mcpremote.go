package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"boxmaker/wire"
)

// Remote reports whether s is a remote server (url), which toolkit reaches
// through egressd, rather than a local one it starts (command).
func (s MCPServer) Remote() bool { return s.URL != "" }

// checkRemote holds a remote server to its own keys: url (checked by
// CheckMCPURL) and secret; command, ro, rw and env belong to local servers.
func (s MCPServer) checkRemote() error {
	switch {
	case s.URL == "":
		return errors.New("secret goes with url: a local server (command) gets no secret")
	case len(s.Command) > 0:
		return errors.New("url and command: a server is remote (url) or local (command), not both")
	case len(s.RO) > 0 || len(s.RW) > 0 || len(s.Env) > 0:
		return errors.New("ro, rw and env are a local server's (command); a remote one (url) has none")
	}
	if err := CheckMCPURL(s.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if s.Secret != "" && !secretName().MatchString(s.Secret) {
		return fmt.Errorf("secret %q must be a file name in the secrets directory", s.Secret)
	}
	return s.checkLimits()
}

// CheckMCPURL checks a remote server's endpoint: https:// with a host name
// or IP literal, or http:// with an IP literal only (the owner wrote that
// address, so egressd may reach it even when it is loopback or private;
// a name such as localhost is never reached over plain http). No userinfo,
// query or fragment; the path is what egressd lets the sandbox ask for.
// egressd repeats these checks on the URL brokerd sends it.
func CheckMCPURL(raw string) error {
	if len(raw) > wire.MaxMcpURL {
		return fmt.Errorf("over %d bytes", wire.MaxMcpURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%q: the scheme must be https (or http with an IP literal host)", raw)
	case u.Opaque != "" || u.Host == "":
		return fmt.Errorf("%q: no host", raw)
	case u.User != nil:
		return fmt.Errorf("%q: userinfo is not allowed; name a secret instead", raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "#?"):
		return fmt.Errorf("%q: no query or fragment", raw)
	case u.Path != "" && !strings.HasPrefix(u.Path, "/") || strings.Contains(u.Path, "/../") || strings.HasSuffix(u.Path, "/.."):
		// No path at all is "/", as an HTTP client asks for it.
		return fmt.Errorf("%q: the path must be absolute, such as /mcp", raw)
	}
	if err := wire.McpURL(raw).Check(); err != nil {
		return err
	}
	host := u.Hostname()
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return fmt.Errorf("%q: bad port", raw)
		}
	}
	_, ipErr := netip.ParseAddr(strings.Trim(host, "[]"))
	if u.Scheme == "http" && ipErr != nil {
		return fmt.Errorf("%q: plain http is allowed only to an IP literal the owner writes (such as http://127.0.0.1:8080/mcp); use https for a name", raw)
	}
	if strings.Contains(host, "%") {
		return fmt.Errorf("%q: a zoned address names a link, not a server", raw)
	}
	return nil
}

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Gateway is [gateway], gatewayd's Mattermost bot. gatewayd runs only when
// the table is present, so the Config field that holds it is a pointer.
// The bot token itself is never here: TokenSecret names the file in the
// secrets directory that holds it.
type Gateway struct {
	URL          string   `toml:"url"`           // https://host[/path]; http:// only for a loopback host
	TokenSecret  string   `toml:"token_secret"`  // file name in the secrets directory
	Channels     []string `toml:"channels"`      // channel ids it listens in; DMs to the bot always count
	AllowUsers   []string `toml:"allow_users"`   // user ids who may talk to it and answer approvals; the first is the owner
	ApproveEmoji string   `toml:"approve_emoji"` // emoji name, without colons
	DenyEmoji    string   `toml:"deny_emoji"`
	EditInterval Duration `toml:"edit_interval"` // a streamed reply is edited at most this often
	// SecretApprovals lets brokerd offer on Mattermost the approvals of
	// calls in sessions above private, whose arguments may hold a secret
	// the model read; off, they are answered on the host only. A call that
	// reads a secret handle is never offered, whatever this says.
	SecretApprovals bool `toml:"secret_approvals"`
}

// GatewayDefaults are the values Check gives to absent [gateway] keys.
var GatewayDefaults = Gateway{TokenSecret: "mattermost-bot", ApproveEmoji: "+1", DenyEmoji: "-1", EditInterval: Dur(time.Second)}

// The patterns are compiled on first use, so that no role pays for them at
// start (issue 15): only a configuration with [gateway] reaches them.
var (
	// Mattermost ids are 26 characters of lowercase base32.
	mattermostID = lazyRegexp(`^[a-z0-9]{26}$`)
	// The emoji names Mattermost's Reaction.IsValid accepts.
	emojiName  = lazyRegexp(`^[a-zA-Z0-9\-\+_]+$`)
	secretName = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Check fills the defaults of absent keys and checks every value; its errors
// name the key.
func (g *Gateway) Check() error {
	if g.TokenSecret == "" {
		g.TokenSecret = GatewayDefaults.TokenSecret
	}
	if g.ApproveEmoji == "" {
		g.ApproveEmoji = GatewayDefaults.ApproveEmoji
	}
	if g.DenyEmoji == "" {
		g.DenyEmoji = GatewayDefaults.DenyEmoji
	}
	if g.EditInterval.D() == 0 {
		g.EditInterval = GatewayDefaults.EditInterval
	}
	g.URL = strings.TrimRight(g.URL, "/")
	if err := checkServerURL(g.URL); err != nil {
		return err
	}
	if !secretName().MatchString(g.TokenSecret) {
		return fmt.Errorf("gateway.token_secret %q must be a file name in the secrets directory", g.TokenSecret)
	}
	if err := checkIDs("gateway.channels", g.Channels, false); err != nil {
		return err
	}
	if err := checkIDs("gateway.allow_users", g.AllowUsers, true); err != nil {
		return err
	}
	for _, e := range []struct{ key, name string }{{"approve_emoji", g.ApproveEmoji}, {"deny_emoji", g.DenyEmoji}} {
		if !emojiName().MatchString(e.name) {
			return fmt.Errorf("gateway.%s %q is not an emoji name (letters, digits, -, + and _, without colons)", e.key, e.name)
		}
	}
	if g.ApproveEmoji == g.DenyEmoji {
		return errors.New("gateway.approve_emoji and gateway.deny_emoji must differ")
	}
	if g.EditInterval.D() < 100*time.Millisecond {
		return errors.New("gateway.edit_interval must be at least 100ms")
	}
	return nil
}

// checkServerURL allows https anywhere and http only to a loopback host:
// the bot token travels in every request.
func checkServerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("gateway.url %q must be the server's address, such as https://mattermost.example", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("gateway.url %q: http:// is allowed only for a loopback host; use https://", raw)
	}
	return fmt.Errorf("gateway.url %q must start with https://", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkIDs(key string, ids []string, needOne bool) error {
	if needOne && len(ids) == 0 {
		return fmt.Errorf("%s must list at least one user id (the first is the owner)", key)
	}
	for _, id := range ids {
		if !mattermostID().MatchString(id) {
			return fmt.Errorf("%s: %q is not a Mattermost id (26 lowercase letters and digits)", key, id)
		}
	}
	return nil
}

// LoadGateway reads only the [gateway] table of the file at path, checked
// as Check does: nil when the file or the table is absent. Unknown keys
// inside [gateway] are errors naming the key and line; the other tables are
// left to Load, so that gatewayd needs nothing else of the file.
func LoadGateway(path string) (*Gateway, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var file struct {
		Gateway *Gateway `toml:"gateway"`
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := unknownGatewayKeys(dec.Decode(&file)); err != nil {
		return nil, fmt.Errorf("%s: %s", path, err)
	}
	if file.Gateway == nil {
		return nil, nil
	}
	if err := file.Gateway.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return file.Gateway, nil
}

// unknownGatewayKeys keeps the errors that concern [gateway]: go-toml
// decodes the whole file before it reports unknown keys, and the keys of
// other tables are all unknown here.
func unknownGatewayKeys(err error) error {
	var missing *toml.StrictMissingError
	if !errors.As(err, &missing) {
		if err != nil {
			return errors.New(describe(err))
		}
		return nil
	}
	var parts []string
	for _, e := range missing.Errors {
		if key := e.Key(); len(key) > 0 && key[0] == "gateway" {
			row, _ := e.Position()
			parts = append(parts, fmt.Sprintf("line %d: unknown key %s", row, strings.Join(key, ".")))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return errors.New(strings.Join(parts, "; "))
}

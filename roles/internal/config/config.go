package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"boxmaker/roles/internal/environ"
	"boxmaker/roles/internal/toolrun"

	"github.com/pelletier/go-toml/v2"
)

// Config is config.toml. Every table and key is optional; Load fills the
// defaults for what is absent.
type Config struct {
	Infer   Infer    `toml:"infer"`
	Broker  Broker   `toml:"broker"`
	Sandbox Sandbox  `toml:"sandbox"`
	Egress  Egress   `toml:"egress"`
	Consult Consult  `toml:"consult"`
	Loop    Loop     `toml:"loop"`
	Audit   Audit    `toml:"audit"`
	Handles Handles  `toml:"handles"`
	Inspect Inspect  `toml:"inspect"`
	Gateway *Gateway `toml:"gateway"` // gatewayd runs only when this table is present
}

// ScriptedUpstream is the upstream `boxmaker up --scripted-model` (or
// --model-script) gives inferproxy and inspectd: the llama-server double of
// roles/internal/llamadouble, served inside each one's own unprivileged
// process (it parses prompts that hold web content), never inside the
// supervisor.
const ScriptedUpstream = "scripted:"

// ModelScriptEnv names the variable in which `boxmaker up --model-script`
// gives inferproxy the script's text (read by up as the owner, so the file
// need not be readable by inferproxy's user; an environment variable, not a
// pipe, so that a restarted inferproxy gets it again). Without it the
// scripted model answers with its default script. inferproxy reads it only
// when its upstream is ScriptedUpstream.
const ModelScriptEnv = environ.ModelScript

// UpstreamEnv names the variable that overrides [infer] upstream; up sets
// it for inferproxy.
const UpstreamEnv = environ.Upstream

// CredentialsEnv names the directory of a role's copies of its secrets,
// as systemd's LoadCredential= sets it and up as root does likewise.
const CredentialsEnv = environ.Credentials

// Infer is inferproxy's upstream: the one key without a default.
type Infer struct {
	Upstream string `toml:"upstream"` // http://host:port; $BOXMAKER_UPSTREAM wins
}

// Broker is brokerd's own behaviour.
type Broker struct {
	ApprovalTimeout Duration `toml:"approval_timeout"` // how long an approval waits
	ResultMaxBytes  int      `toml:"result_max_bytes"` // results are cut here, on a UTF-8 boundary
	// MaxSandboxes bounds the tool sandboxes running at once, over every
	// session; a call past it is answered failed at once, never queued.
	MaxSandboxes int `toml:"max_sandboxes"`
	// MaxPendingApprovals bounds the approvals waiting for the owner at once.
	MaxPendingApprovals int `toml:"max_pending_approvals"`
	// MaxConnections bounds the open connections on each of brokerd's sockets.
	MaxConnections int `toml:"max_connections"`
	// FrameTimeout bounds how long a frame may take to arrive once its
	// first byte has: a peer that stalls mid-frame is dropped.
	FrameTimeout Duration `toml:"frame_timeout"`
}

// Sandbox bounds every tool run.
type Sandbox struct {
	Bwrap       string   `toml:"bwrap"` // the bubblewrap binary
	CPUSeconds  int      `toml:"cpu_seconds"`
	MemoryMB    int      `toml:"memory_mb"`
	WallTime    Duration `toml:"wall_time"`
	OutputBytes int      `toml:"output_bytes"`
	Processes   int      `toml:"processes"`
	// SystemPaths are host directories the shell tool's sandbox gets
	// read-only at the same place, beside /usr and the merged-usr links:
	// /nix/store on NixOS, which holds /bin/sh and every command.
	SystemPaths []string `toml:"system_paths"`
	// ShellPath is the PATH of the shell tool's commands.
	ShellPath string `toml:"shell_path"`
}

// Egress bounds every request egressd makes for a tool.
type Egress struct {
	MaxBytes     int      `toml:"max_bytes"`
	Timeout      Duration `toml:"timeout"`
	MaxRedirects int      `toml:"max_redirects"`
}

// Consult is the hosted model the consult tool asks.
type Consult struct {
	URL   string `toml:"url"`   // an OpenAI-compatible chat completions endpoint
	Model string `toml:"model"` // sent as "model"
}

// Defaults returns the configuration used for every absent key.
func Defaults() Config {
	return Config{
		Broker: Broker{ApprovalTimeout: Dur(10 * time.Minute), ResultMaxBytes: 64 << 10,
			MaxSandboxes: 8, MaxPendingApprovals: 16, MaxConnections: 64, FrameTimeout: Dur(10 * time.Second)},
		Sandbox: Sandbox{Bwrap: "/usr/bin/bwrap", CPUSeconds: 10, MemoryMB: 512, WallTime: Dur(30 * time.Second), OutputBytes: 1 << 20, Processes: 64,
			SystemPaths: []string{}, ShellPath: "/usr/bin:/bin"},
		Egress:  Egress{MaxBytes: 4 << 20, Timeout: Dur(20 * time.Second), MaxRedirects: 5},
		Loop:    DefaultLoop(),
		Audit:   DefaultAudit(),
		Handles: DefaultHandles(),
		Inspect: DefaultInspect(),
	}
}

// Load reads path over the defaults. A missing file gives the defaults; a
// file that does not parse, or has an unknown key or a bad value, is an
// error naming the file, the line where known, and the key.
func Load(path string) (Config, error) {
	cfg := Defaults()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, cfg.finish()
	}
	if err != nil {
		return cfg, err
	}
	if errs := checkKeys(data); len(errs) > 0 {
		return cfg, fmt.Errorf("%s: %s", path, strings.Join(errs, "; "))
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("%s: %s", path, describe(err))
	}
	if err := cfg.finish(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// finish applies the environment and checks the values.
func (c *Config) finish() error {
	if up := os.Getenv(UpstreamEnv); up != "" {
		c.Infer.Upstream = up
	}
	for _, check := range []func() error{c.Audit.Check, c.Handles.Check, c.Inspect.Check} {
		if err := check(); err != nil {
			return err
		}
	}
	if c.Gateway != nil {
		if err := c.Gateway.Check(); err != nil {
			return err
		}
	}
	if err := (toolrun.System{Paths: c.Sandbox.SystemPaths, ShellPath: c.Sandbox.ShellPath}).Check(); err != nil {
		return fmt.Errorf("[sandbox] system_paths and shell_path: %w", err)
	}
	for _, check := range []struct {
		ok  bool
		msg string
	}{
		{c.Broker.ApprovalTimeout.D() > 0, "broker.approval_timeout must be positive"},
		{c.Broker.ResultMaxBytes > 0, "broker.result_max_bytes must be positive"},
		{c.Broker.MaxSandboxes > 0 && c.Broker.MaxPendingApprovals > 0 && c.Broker.MaxConnections > 0 && c.Broker.FrameTimeout.D() > 0,
			"broker.max_sandboxes, max_pending_approvals, max_connections and frame_timeout must be positive"},
		{strings.HasPrefix(c.Sandbox.Bwrap, "/"), "sandbox.bwrap must be an absolute path"},
		{c.Sandbox.CPUSeconds > 0 && c.Sandbox.MemoryMB > 0 && c.Sandbox.WallTime.D() > 0 &&
			c.Sandbox.OutputBytes > 0 && c.Sandbox.Processes > 0, "sandbox limits must be positive"},
		{c.Egress.MaxBytes > 0 && c.Egress.Timeout.D() > 0 && c.Egress.MaxRedirects >= 0, "egress limits must be positive"},
	} {
		if !check.ok {
			return errors.New(check.msg)
		}
	}
	return nil
}

// describe turns go-toml's errors into "line N: reason", as
// policy.TOMLError words them for grants and jobs. It is a copy on purpose:
// config is linked into toolkit, which must never link policy
// (TestLinkRules).
func describe(err error) string {
	var missing *toml.StrictMissingError
	if errors.As(err, &missing) {
		var parts []string
		for _, e := range missing.Errors {
			row, _ := e.Position()
			parts = append(parts, fmt.Sprintf("line %d: unknown key %s", row, strings.Join(e.Key(), ".")))
		}
		return strings.Join(parts, "; ")
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return fmt.Sprintf("line %d: %s", row, de.Error())
	}
	return err.Error()
}

// Duration is a TOML string such as "10m" or "30s". It is a struct so that
// a bare TOML integer (which would read as nanoseconds) is a type error.
type Duration struct{ d time.Duration }

// Dur makes a Duration, for defaults and tests.
func Dur(d time.Duration) Duration { return Duration{d} }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"30s\" or \"10m\"", b)
	}
	d.d = v
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.d.String()), nil }

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return d.d }

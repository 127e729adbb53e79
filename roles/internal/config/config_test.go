package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadDefaultsAndValues(t *testing.T) {
	t.Setenv("BOXMAKER_UPSTREAM", "")
	cfg, err := Load(filepath.Join(t.TempDir(), "absent.toml"))
	if err != nil || !reflect.DeepEqual(cfg, Defaults()) {
		t.Fatalf("missing file: %+v, %v; want the defaults", cfg, err)
	}
	cfg, err = Load(writeConfig(t, "[broker]\napproval_timeout = \"90s\"\n[infer]\nupstream = \"http://127.0.0.1:8080\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Broker.ApprovalTimeout.D() != 90*time.Second || cfg.Infer.Upstream != "http://127.0.0.1:8080" {
		t.Errorf("got %+v", cfg)
	}
	if !reflect.DeepEqual(cfg.Sandbox, Defaults().Sandbox) {
		t.Errorf("untouched table changed: %+v", cfg.Sandbox)
	}
	t.Setenv("BOXMAKER_UPSTREAM", "http://10.0.0.9:9000")
	if cfg, _ = Load(writeConfig(t, "[infer]\nupstream = \"http://127.0.0.1:8080\"\n")); cfg.Infer.Upstream != "http://10.0.0.9:9000" {
		t.Errorf("BOXMAKER_UPSTREAM did not win: %q", cfg.Infer.Upstream)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", "[broker]\napproval_timeout = \"1m\"\napproval_timout = \"2m\"\n", "line 3: unknown key broker.approval_timout"},
		{"unknown table", "[brokr]\nx = 1\n", "unknown key brokr"},
		{"bad duration", "[broker]\napproval_timeout = \"soon\"\n", `"soon" is not a duration`},
		{"wrong type", "[sandbox]\ncpu_seconds = \"ten\"\n", "line 2"},
		{"syntax", "[sandbox\n", "line 1"},
		{"relative bwrap", "[sandbox]\nbwrap = \"bwrap\"\n", "sandbox.bwrap must be an absolute path"},
		{"zero limit", "[sandbox]\nprocesses = 0\n", "sandbox limits must be positive"},
		{"relative system path", "[sandbox]\nsystem_paths = [\"nix/store\"]\n", `system path "nix/store" must be a clean absolute path`},
		{"system path over /usr", "[sandbox]\nsystem_paths = [\"/usr/lib\"]\n", `overlaps the sandbox's own /usr`},
		{"system path over /tmp", "[sandbox]\nsystem_paths = [\"/tmp\"]\n", `overlaps the sandbox's own /tmp`},
		{"empty shell path", "[sandbox]\nshell_path = \"\"\n", "the shell path is empty"},
		{"relative shell path", "[sandbox]\nshell_path = \"bin:/usr/bin\"\n", `shell path entry "bin"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, c.text)
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v; want an error naming the file and saying %q", err, c.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Setenv("BOXMAKER_HOME", "")
	p, _ := Resolve("", "")
	if p.Home != DefaultHome || p.Config != "/etc/boxmaker/config.toml" || p.Grants != "/etc/boxmaker/grants" {
		t.Errorf("default: %+v", p)
	}
	t.Setenv("BOXMAKER_HOME", "/srv/bx")
	p, _ = Resolve("", "")
	if p.Home != "/srv/bx" || p.Config != "/srv/bx/etc/config.toml" || p.Secrets != "/srv/bx/etc/secrets" {
		t.Errorf("env home: %+v", p)
	}
	p, _ = Resolve("/flag/home", "/x/y/config.toml")
	if p.Home != "/flag/home" || p.Grants != "/x/y/grants" {
		t.Errorf("flags: %+v", p)
	}
}

// A bare integer would read as nanoseconds; it is a type error instead.
func TestDurationNeedsAUnit(t *testing.T) {
	path := writeConfig(t, "[broker]\napproval_timeout = 600\n")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `"600" is not a duration`) {
		t.Fatalf("a bare integer duration: %v", err)
	}
}

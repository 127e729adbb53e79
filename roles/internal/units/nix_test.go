package units

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
)

var update = flag.Bool("update", false, "rewrite nix/units.json from the role table")

// nixDir is the repository's nix/, seen from this package.
const nixDir = "../../../nix"

// TestNixDataIsCurrent: the module reads nix/units.json, so it must be what
// the role table gives today.
func TestNixDataIsCurrent(t *testing.T) {
	want, err := NixData()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(nixDir, "units.json")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is not what the role table gives (%v); rewrite it: go test ./roles/internal/units -run NixData -update", path, err)
	}
}

// nixInstantiate finds the Nix evaluator, or skips: the gate installs it
// (Debian's nix-bin), a developer's machine may not have it.
func nixInstantiate(t *testing.T) string {
	t.Helper()
	return require.Tool(t, "nix-instantiate", "nix-bin")
}

func TestNixFilesParse(t *testing.T) {
	bin := nixInstantiate(t)
	for _, f := range []string{"package.nix", "module.nix", "units.nix", "../roles/internal/units/testdata/stub.nix", "../roles/internal/units/testdata/stub-nixpkgs.nix", "../flake.nix"} {
		if out, err := exec.Command(bin, "--parse", filepath.Join(nixDir, f)).CombinedOutput(); err != nil {
			t.Errorf("%s does not parse: %v\n%s", f, err, out)
		}
	}
}

// nixEval evaluates expr strictly and decodes its JSON into v. It skips
// when this machine cannot evaluate at all (no writable Nix state).
func nixEval(t *testing.T, expr string, v any) {
	t.Helper()
	bin := nixInstantiate(t)
	if out, err := exec.Command(bin, "--eval", "-E", "1").CombinedOutput(); err != nil {
		require.Available(t, "nix-instantiate", fmt.Errorf("it cannot evaluate here: %v\n%s", err, out))
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--eval", "--strict", "--json", "-E", expr)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s\nexpression: %s", err, stderr.String(), expr)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// nixSite is what units.nix gives a site, as far as install also decides it.
type nixSite struct {
	Users       []User             `json:"users"`
	Groups      []Group            `json:"groups"`
	Dirs        []Dir              `json:"dirs"`
	Services    map[string]nixUnit `json:"services"`
	TargetWants []string           `json:"targetWants"`
}

type nixUnit struct {
	Description   string         `json:"description"`
	Requires      []string       `json:"requires"`
	Wants         []string       `json:"wants"`
	After         []string       `json:"after"`
	PartOf        []string       `json:"partOf"`
	ServiceConfig map[string]any `json:"serviceConfig"` // a string per key; a list for the credential keys
}

// installedSite is what install derives for the site, in units.nix's shape.
func installedSite(s Site) nixSite {
	want := nixSite{Users: Users(), Groups: Groups(), Dirs: Dirs(s), Services: map[string]nixUnit{}}
	for _, svc := range Services(s) {
		n := nixServiceOf(svc)
		want.Services[n.Name] = nixUnit{Description: n.Description, Requires: n.Requires, Wants: n.Wants, After: n.After,
			PartOf: []string{Target}, ServiceConfig: serviceConfigOf(svc)}
		want.TargetWants = append(want.TargetWants, svc.Unit)
	}
	return want
}

// serviceConfigOf is a unit's [Service] lines as JSON gives NixOS's
// serviceConfig: one string per key, and a list for a credential key, which
// repeats once per secret.
func serviceConfigOf(svc Service) map[string]any {
	cfg := map[string]any{}
	for _, d := range svc.Directives {
		if !slices.Contains(credentialKeys, d.Key) {
			cfg[d.Key] = d.Value
			continue
		}
		l, _ := cfg[d.Key].([]any)
		cfg[d.Key] = append(l, d.Value)
	}
	return cfg
}

// nixList is a Nix list of strings.
func nixList(l []string) string {
	var b strings.Builder
	b.WriteString("[")
	for _, s := range l {
		fmt.Fprintf(&b, " %q", s)
	}
	return b.String() + " ]"
}

func nixString(s string) string {
	if s == "" {
		return "null"
	}
	return fmt.Sprintf("%q", s)
}

// TestNixUnitsMatchInstall evaluates units.nix for several sites and wants
// exactly the users, groups, directories and units install makes for them.
func TestNixUnitsMatchInstall(t *testing.T) {
	units, _ := filepath.Abs(filepath.Join(nixDir, "units.nix"))
	layout := Layout{Bin: "/nix/store/x-boxmaker/bin", Units: "/etc/systemd/system", Etc: "/etc/boxmaker", Home: "/srv/boxmaker"}
	withGrants := func(s Site, names ...string) Site { s.GrantSecrets = names; return s }
	for _, s := range []Site{
		NewSite(layout, "http://10.0.0.5:8080", "mattermost-bot"),
		NewSite(layout, "http://[fd00::5]:8080/", ""),
		NewSite(layout, "scripted:", ""),
		withGrants(NewSite(layout, "http://localhost:8080", "bot"), "consult-api", "bot", "search-key", "consult-api"),
		withGrants(NewSite(layout, "http://straylight.example:8080", ""), "consult-api"),
		NewSite(layout, "", ""),
	} {
		var got nixSite
		nixEval(t, fmt.Sprintf("import %s { home = %q; etc = %q; bin = %q; upstream = %s; tokenSecret = %s; grantSecrets = %s; }",
			units, s.Home, s.Etc, s.Bin, nixString(s.Upstream), nixString(s.GatewayToken), nixList(s.GrantSecrets)), &got)
		want := installedSite(s)
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range want.Services {
				if !yield(k) {
					return
				}
			}
		}) {
			if !reflect.DeepEqual(got.Services[name], want.Services[name]) {
				t.Errorf("upstream %q, token %q: %s differs\nnix:     %+v\ninstall: %+v", s.Upstream, s.GatewayToken, name, got.Services[name], want.Services[name])
			}
		}
		got.Services, want.Services = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("upstream %q, token %q:\nnix:     %+v\ninstall: %+v", s.Upstream, s.GatewayToken, got, want)
		}
	}
}

// moduleResult is what the test expression picks out of module.nix.
type moduleResult struct {
	Services map[string]struct {
		ServiceConfig   map[string]any `json:"serviceConfig"`
		RestartTriggers []string       `json:"restartTriggers"`
	} `json:"services"`
	Users map[string]struct {
		IsSystemUser bool     `json:"isSystemUser"`
		Group        string   `json:"group"`
		ExtraGroups  []string `json:"extraGroups"`
	} `json:"users"`
	Groups     []string          `json:"groups"`
	Tmpfiles   []string          `json:"tmpfiles"`
	Config     map[string]any    `json:"config"`
	Grant      map[string]string `json:"grant"`
	Wants      []string          `json:"wants"`
	Links      string            `json:"links"`
	File       string            `json:"grantFile"`
	Assertions []bool            `json:"assertions"`
	Job        map[string]string `json:"job"`
}

// TestNixModuleUsesTheUnits evaluates module.nix and package.nix against a
// stub of nixpkgs' lib and checks that they hand units.nix's data to NixOS
// unchanged: the same units, users, groups and directories install makes.
func TestNixModuleUsesTheUnits(t *testing.T) {
	root, _ := filepath.Abs(nixDir)
	stub, _ := filepath.Abs("testdata/stub.nix")
	grantFile, _ := filepath.Abs("testdata/grant-search.toml")
	expr := strings.NewReplacer("@nix@", root, "@stub@", stub, "@grant@", grantFile).Replace(moduleExpr)
	var got moduleResult
	nixEval(t, expr, &got)
	s := NewSite(Layout{Bin: "/nix/store/stub-boxmaker/bin", Units: "/etc/systemd/system", Etc: "/etc/boxmaker", Home: "/var/lib/boxmaker"},
		"http://127.0.0.1:8080", "mattermost-bot")
	// The text grant names consult-api, the file grant search-key and the
	// third the bot token, which brokerd then reads as well as gatewayd.
	s.GrantSecrets = []string{"consult-api", "search-key", "mattermost-bot"}
	want := installedSite(s)
	for name, u := range want.Services {
		if !reflect.DeepEqual(got.Services[name].ServiceConfig, u.ServiceConfig) || len(got.Services[name].RestartTriggers) != 1 {
			t.Errorf("%s: module gives %v", name, got.Services[name])
		}
	}
	for _, u := range Users() {
		if g := got.Users[u.Name]; !g.IsSystemUser || g.Group != u.Name || !slices.Equal(g.ExtraGroups, u.Groups) {
			t.Errorf("user %s: %+v", u.Name, g)
		}
	}
	for _, g := range Groups() {
		if !slices.Contains(got.Groups, g.Name) {
			t.Errorf("the module makes no group %s", g.Name)
		}
	}
	for _, d := range Dirs(s) {
		kind := map[bool]string{false: "d", true: "f"}[d.File]
		if rule := fmt.Sprintf("%s %s %s %s %s -", kind, d.Path, d.Mode, d.Owner, d.Group); !slices.Contains(got.Tmpfiles, rule) {
			t.Errorf("no tmpfiles rule %q", rule)
		}
	}
	sb := got.Config["sandbox"].(map[string]any)
	if sb["shell_path"] != "/nix/store/stub-boxmaker-shell-tools/bin:/usr/bin:/bin" || sb["wall_time"] != "60s" ||
		!reflect.DeepEqual(sb["system_paths"], []any{"/nix/store"}) {
		t.Errorf("config.toml [sandbox]: %v", sb)
	}
	if sb["bwrap"] != "/nix/store/stub-bubblewrap/bin/bwrap" ||
		got.Config["gateway"].(map[string]any)["token_secret"] != "mattermost-bot" {
		t.Errorf("config.toml: %v", got.Config)
	}
	if got.Grant["group"] != "boxmaker-broker" || got.Grant["mode"] != "0640" || got.File != grantFile ||
		!slices.Equal(got.Wants, want.TargetWants) {
		t.Errorf("grants %v, %q; target wants %v", got.Grant, got.File, got.Wants)
	}
	// The module installs jobs beside the grants, as install does.
	if got.Job["group"] != "boxmaker-broker" || got.Job["mode"] != "0640" || got.Job["user"] != "root" || !strings.Contains(got.Job["text"], "every = \"24h\"") {
		t.Errorf("jobs: %v", got.Job)
	}
	if len(got.Assertions) != 1+4 || slices.Contains(got.Assertions, false) {
		t.Errorf("assertions (the home, then one per secret name): %v", got.Assertions)
	}
	for _, role := range LinkRoles() {
		if !strings.Contains(got.Links, "'"+role+"'") {
			t.Errorf("package.nix makes no %s link: %s", role, got.Links)
		}
	}
}

const moduleExpr = `
let
  stub = import @stub@;
  m = import @nix@/module.nix {
    inherit (stub) lib pkgs;
    config.services.boxmaker = {
      enable = true;
      package = "/nix/store/stub-boxmaker";
      home = "/var/lib/boxmaker";
      upstream = "http://127.0.0.1:8080";
      gateway = { url = "https://mm.example"; token_secret = "mattermost-bot"; channels = [ ];
        allow_users = [ "abcdefghijklmnopqrstuvwxyz" ]; approve_emoji = "+1"; deny_emoji = "-1"; };
      grants = { fetch-docs = "tool = \"consult\"\nsecret = \"consult-api\"\n"; notes = "@grant@";
        bot = "tool = \"consult\"\nsecret = \"mattermost-bot\"\n"; plain = "tool = \"notes_read\"\n"; };
      jobs = { morning = "every = \"24h\"\nprompt = \"hello\"\ndeliver = \"log\"\n"; };
      shellPackages = [ "/nix/store/stub-bash" ];
      settings = { sandbox.wall_time = "60s"; };
    };
  };
  c = m.config.content;
  p = import @nix@/package.nix { inherit (stub) lib buildGoModule; };
in {
  services = c.systemd.services;
  users = c.users.users;
  groups = builtins.attrNames c.users.groups;
  tmpfiles = c.systemd.tmpfiles.rules;
  config = c.environment.etc."boxmaker/config.toml".source.value;
  grant = removeAttrs c.environment.etc."boxmaker/grants/fetch-docs.toml" [ "text" ];
  grantFile = c.environment.etc."boxmaker/grants/notes.toml".source;
  job = c.environment.etc."boxmaker/jobs/morning.toml";
  wants = c.systemd.targets.boxmaker.wants;
  links = p.postInstall;
  assertions = map (a: a.assertion) c.assertions;
}`

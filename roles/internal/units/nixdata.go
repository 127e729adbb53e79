package units

import (
	"encoding/json"
	"slices"
	"strings"

	"boxmaker/roles"
)

// NixFile is where the repository keeps NixData, beside the module.
const NixFile = "nix/units.json"

// nixData is nix/units.json: the plan of the template site, with
// placeholders where the module puts its own paths and token, and the
// secrets each unit loads given by their source, not by name.
type nixData struct {
	Comment  string       `json:"_comment"`
	Binary   string       `json:"binary"`
	Links    []string     `json:"links"`
	Users    []User       `json:"users"`
	Groups   []Group      `json:"groups"`
	Dirs     []Dir        `json:"dirs"`
	Services []nixService `json:"services"`
	Target   string       `json:"target"`
	// Credential is each credential key's line for one secret, with
	// PlaceholderSecret for its name: units.nix writes one per secret a
	// service's Secrets source names.
	Credential map[string]string `json:"credential"`
}

// nixService is a Service as a NixOS systemd.services entry takes it.
type nixService struct {
	Name           string   `json:"name"` // the unit without .service
	Role           string   `json:"role"`
	Description    string   `json:"description"`
	Needs          string   `json:"needs"`
	Requires       []string `json:"requires"`
	Wants          []string `json:"wants"`
	After          []string `json:"after"`
	UpstreamFilter bool     `json:"upstreamFilter"`
	// Secrets is what names the secrets the unit loads: "gateway" (the
	// module's token_secret), "grants" (every grant's secret) or "".
	Secrets       string            `json:"secrets"`
	ServiceConfig map[string]string `json:"serviceConfig"` // without the credential keys
}

// NixData is the text of nix/units.json, which nix/units.nix reads: what
// install does, for any site, with the paths and the gateway token left as
// placeholders and inferproxy's address filter left to the module.
func NixData() ([]byte, error) {
	s := templateSite()
	d := nixData{
		Comment: "Generated from the role table by `boxmaker install --nix-data`; do not edit. " +
			"roles/internal/units checks it is current (go test -run Nix ./roles/internal/units -update rewrites it).",
		Binary: Binary, Links: LinkRoles(), Users: Users(), Groups: Groups(), Dirs: Dirs(s), Target: Target,
		Credential: map[string]string{},
	}
	for _, c := range credentialLines(s.SecretsDir(), PlaceholderSecret) {
		d.Credential[c.Key] = c.Value
	}
	for _, svc := range services(s, false) {
		d.Services = append(d.Services, nixServiceOf(svc))
	}
	out, err := json.MarshalIndent(d, "", "  ")
	return append(out, '\n'), err
}

func nixServiceOf(svc Service) nixService {
	cfg := map[string]string{}
	for _, d := range svc.Directives {
		if !slices.Contains(credentialKeys, d.Key) {
			cfg[d.Key] = d.Value
		}
	}
	return nixService{
		Name: strings.TrimSuffix(svc.Unit, ".service"), Role: svc.Role, Description: svc.Description, Needs: svc.Needs,
		Requires: nonNil(svc.Requires), Wants: nonNil(svc.Wants), After: nonNil(svc.After),
		UpstreamFilter: svc.FilterUpstream, Secrets: secretsOf(svc.Role), ServiceConfig: cfg,
	}
}

// secretsOf is the role's Secrets column as units.nix takes it.
func secretsOf(role string) string {
	spec, _ := roles.Lookup(role)
	return string(spec.Secrets)
}

// nonNil makes an absent list [] in JSON, which Nix's list functions take.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

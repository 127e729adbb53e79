package config

import (
	"os"
	"path/filepath"
)

// DefaultHome is where a production install keeps its state.
const DefaultHome = "/var/lib/boxmaker"

// productionEtc holds config.toml, grants/ and secrets/ for DefaultHome.
const productionEtc = "/etc/boxmaker"

// Paths are the places a role reads and writes, derived from the home and
// the config file.
type Paths struct {
	Home    string // $BOXMAKER_HOME
	Config  string // config.toml
	Grants  string // grants/, beside config.toml
	Secrets string // secrets/, beside config.toml
	Jobs    string // jobs/, beside config.toml (DESIGN.md section 13)
}

// Resolve picks the home (the --home flag, then $BOXMAKER_HOME, then
// DefaultHome) and the config file (the --config flag, then /etc/boxmaker for
// the default home, else <home>/etc). Empty arguments mean "not given".
func Resolve(homeFlag, configFlag string) (Paths, error) {
	home := homeFlag
	if home == "" {
		home = os.Getenv("BOXMAKER_HOME")
	}
	if home == "" {
		home = DefaultHome
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return Paths{}, err
	}
	cfg := configFlag
	switch {
	case cfg != "":
	case home == DefaultHome:
		cfg = filepath.Join(productionEtc, "config.toml")
	default:
		cfg = filepath.Join(home, "etc", "config.toml")
	}
	if cfg, err = filepath.Abs(cfg); err != nil {
		return Paths{}, err
	}
	etc := filepath.Dir(cfg)
	return Paths{Home: home, Config: cfg, Grants: filepath.Join(etc, "grants"), Secrets: filepath.Join(etc, "secrets"),
		Jobs: filepath.Join(etc, "jobs")}, nil
}

// Join returns a path under the home.
func (p Paths) Join(elem ...string) string {
	return filepath.Join(append([]string{p.Home}, elem...)...)
}

package policy

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LoadFile reads and parses one grant file.
func LoadFile(path string) (Grant, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Grant{}, grantReadError(path, err)
	}
	return ParseGrant(path, data)
}

// LoadDir loads every *.toml file in dir. It returns the grants that parsed
// and, separately, one error per file that did not, both sorted by id:
// brokerd ignores just the bad files (fail closed) and logs why, while
// `boxmaker grants check` prints them. Files not named *.toml are not
// grants and are skipped. err is set only when dir itself cannot be read.
func LoadDir(dir string) (grants []Grant, bad []error, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("grants: %w", err)
	}
	// ReadDir sorts by file name, which is not id order ("a-b.toml" comes
	// before "a.toml"), so the names are sorted by stem first.
	names := tomlNames(entries)
	for _, name := range names {
		g, err := LoadFile(filepath.Join(dir, name))
		if err != nil {
			bad = append(bad, err)
			continue
		}
		grants = append(grants, g)
	}
	return grants, bad, nil
}

func tomlNames(entries []os.DirEntry) []string {
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".toml") {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Compare(strings.TrimSuffix(a, ".toml"), strings.TrimSuffix(b, ".toml"))
	})
	return names
}

func sortByID(grants []Grant) { slices.SortStableFunc(grants, byID) }

func byID(a, b Grant) int { return cmp.Compare(a.id, b.id) }

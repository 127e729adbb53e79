package config

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configurationDoc is the owner's reference of every config.toml key.
const configurationDoc = "../../../docs/configuration.md"

// configKeys lists every key Config reads, as "table.key", from the toml
// tags: what the strict decoder accepts is exactly this.
func configKeys() []string {
	var keys []string
	top := reflect.TypeFor[Config]()
	for i := range top.NumField() {
		table := top.Field(i)
		name, _, _ := strings.Cut(table.Tag.Get("toml"), ",")
		t := table.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for j := range t.NumField() {
			if key, _, _ := strings.Cut(t.Field(j).Tag.Get("toml"), ","); key != "" && key != "-" {
				keys = append(keys, name+"."+key)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

var (
	tableHeading = regexp.MustCompile("^## `\\[([a-z_]+)\\]`")
	keyRow       = regexp.MustCompile("^\\| `(?:\\[([a-z_]+)\\] )?([a-z_]+)` \\|")
)

// configTables lists the tables of config.toml.
func configTables() []string {
	var tables []string
	top := reflect.TypeFor[Config]()
	for i := range top.NumField() {
		name, _, _ := strings.Cut(top.Field(i).Tag.Get("toml"), ",")
		tables = append(tables, name)
	}
	return tables
}

// documentedKeys lists the keys docs/configuration.md documents: a row of
// a key table under a "## `[table]`" heading, or a row anywhere that names
// a table of config.toml ("`[handles] max_per_session`"). Other rows (the
// grant and job file keys, "`[constraints] hosts`") are not config.toml's.
func documentedKeys(t *testing.T) []string {
	f, err := os.Open(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	table := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			table = ""
			if m := tableHeading.FindStringSubmatch(line); m != nil {
				table = m[1]
			}
		}
		m := keyRow.FindStringSubmatch(line)
		switch {
		case m == nil:
		case m[1] != "":
			if slices.Contains(configTables(), m[1]) {
				keys = append(keys, m[1]+"."+m[2])
			}
		case table != "":
			keys = append(keys, table+"."+m[2])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Every key config.toml may hold is documented, and every documented key
// is one it may hold: the owner's reference cannot fall behind the parser.
func TestEveryConfigKeyIsDocumented(t *testing.T) {
	code, doc := configKeys(), documentedKeys(t)
	if len(code) < 30 {
		t.Fatalf("found only %d keys in Config; is the walk broken?", len(code))
	}
	for _, k := range code {
		if !slices.Contains(doc, k) {
			t.Errorf("%s is a key of config.toml that %s does not document", k, configurationDoc)
		}
	}
	for _, k := range doc {
		if !slices.Contains(code, k) {
			t.Errorf("%s documents %s, which config.toml does not have", configurationDoc, k)
		}
	}
}

package policy

import (
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyLineMap gives the line of each key of a grant file that parsed, so that
// a problem found after decoding still names its line. Keys are dotted
// ("constraints.hosts"); the i-th [[examples]] table is "examples[i]".
type keyLineMap map[string]int

// keyLines walks the document with go-toml's parser. It is only called on
// documents the decoder accepted, so a parser error just ends the walk.
func keyLines(doc []byte) keyLineMap {
	lines := keyLineMap{}
	var p unstable.Parser
	p.Reset(doc)
	table := ""
	arrays := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			table = dotted(e.Key())
			lines.note(table, &p, e.Key())
		case unstable.ArrayTable:
			name := dotted(e.Key())
			table = fmt.Sprintf("%s[%d]", name, arrays[name])
			arrays[name]++
			lines.note(table, &p, e.Key())
		case unstable.KeyValue:
			lines.note(join(table, dotted(e.Key())), &p, e.Key())
		}
	}
	return lines
}

func (m keyLineMap) note(key string, p *unstable.Parser, it unstable.Iterator) {
	if _, seen := m[key]; seen || !it.Next() {
		return
	}
	m[key] = p.Shape(it.Node().Raw).Start.Line
}

func dotted(it unstable.Iterator) string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

func join(table, key string) string {
	if table == "" {
		return key
	}
	return table + "." + key
}

// of returns key's line, or that of the nearest enclosing key that has
// one, or 0 when the key is not in the file (a missing key).
func (m keyLineMap) of(key string) int {
	for key != "" {
		if line, ok := m[key]; ok {
			return line
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

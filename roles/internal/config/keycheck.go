package config

import (
	"encoding"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// The file is checked key by key against Config before it is decoded, so
// that every mistake of the file is reported at once, each as the grants'
// errors are: the line, the key, what was expected, and for an unknown key
// the nearest known one. The decoder stops at its first mistake and words
// a wrong type with Go's names (config.Sandbox.CPUSeconds of type int),
// which mean nothing to the owner.

// keyError is one mistake of the file.
type keyError struct {
	line int // 0 when the line cannot be found
	msg  string
}

var (
	durationType      = reflect.TypeOf(Duration{})
	textUnmarshalType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// checkKeys lists the file's mistakes, in the order of their lines. A
// file that does not parse as TOML gives none: the decoder reports that.
func checkKeys(data []byte) []string {
	var tree map[string]any
	if toml.Unmarshal(data, &tree) != nil {
		return nil
	}
	var errs []keyError
	lines := strings.Split(string(data), "\n")
	walkTable(reflect.TypeOf(Config{}), tree, nil, lines, &errs)
	slices.SortStableFunc(errs, func(a, b keyError) int { return a.line - b.line })
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.msg
		if e.line > 0 {
			out[i] = fmt.Sprintf("line %d: %s", e.line, e.msg)
		}
	}
	return out
}

func walkTable(t reflect.Type, table map[string]any, path []string, lines []string, errs *[]keyError) {
	fields := tomlFields(t)
	for _, k := range slices.Sorted(mapKeys(table)) {
		key := append(slices.Clone(path), k)
		name := strings.Join(key, ".")
		ft, ok := fields[k]
		if !ok {
			msg := "unknown key " + name
			if near := Nearest(k, slices.Sorted(mapKeys(fields))); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(append(slices.Clone(path), near), "."))
			}
			*errs = append(*errs, keyError{lineOf(lines, key), msg})
			continue
		}
		if msg := checkValue(ft, table[k], key, lines, errs); msg != "" {
			*errs = append(*errs, keyError{lineOf(lines, key), name + ": " + msg})
		}
	}
}

// checkValue says what is wrong with v for a field of type t, or "".
func checkValue(t reflect.Type, v any, key []string, lines []string, errs *[]keyError) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
		}
		if _, err := time.ParseDuration(s); err != nil || !ok {
			return fmt.Sprintf("%q is not a duration such as \"30s\" or \"10m\" (a string, with its unit)", s)
		}
	case reflect.PointerTo(t).Implements(textUnmarshalType):
		if _, ok := v.(string); !ok {
			return "expected a string, not " + tomlKind(v)
		}
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return "expected a table, not " + tomlKind(v)
		}
		walkTable(t, m, key, lines, errs)
	case t.Kind() == reflect.String:
		if _, ok := v.(string); !ok {
			return "expected a string, not " + tomlKind(v)
		}
	case t.Kind() == reflect.Bool:
		if _, ok := v.(bool); !ok {
			return "expected true or false, not " + tomlKind(v)
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		if _, ok := v.(int64); !ok {
			return "expected a whole number, not " + tomlKind(v)
		}
	case t.Kind() == reflect.Float64:
		if _, ok := v.(int64); !ok {
			if _, ok := v.(float64); !ok {
				return "expected a number, not " + tomlKind(v)
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		list, ok := v.([]any)
		if !ok {
			return "expected an array of strings, not " + tomlKind(v)
		}
		for _, e := range list {
			if _, ok := e.(string); !ok {
				return "expected an array of strings, but it holds " + tomlKind(e)
			}
		}
	}
	return "" // anything else the decoder judges
}

// tomlKind names v's TOML type for the owner.
func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the number %d", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// tomlFields maps a struct's TOML keys to their types.
func tomlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name != "" && name != "-" && f.IsExported() {
			out[name] = f.Type
		}
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

var (
	tableHeader = regexp.MustCompile(`^\s*\[\s*([A-Za-z0-9_.-]+)\s*\]`)
	keyLine     = regexp.MustCompile(`^\s*([A-Za-z0-9_-]+)\s*=`)
)

// lineOf finds the line that sets key (or opens it as a table), 1-based,
// for the usual layout: [table] headers and key = value lines. 0 when not
// found (a dotted key or an inline table).
func lineOf(lines []string, key []string) int {
	table := ""
	want := strings.Join(key[:len(key)-1], ".")
	for i, l := range lines {
		if m := tableHeader.FindStringSubmatch(l); m != nil {
			table = m[1]
			if table == strings.Join(key, ".") {
				return i + 1
			}
			continue
		}
		if m := keyLine.FindStringSubmatch(l); m != nil && table == want && m[1] == key[len(key)-1] {
			return i + 1
		}
	}
	return 0
}

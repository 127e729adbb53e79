package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"

	"boxmaker/wire"
)

// grantFile is a grant file as TOML gives it. Pointers tell a missing key
// from a zero value; expires is untyped so that a string or a local
// date-time can be named as such instead of failing as a type mismatch.
type grantFile struct {
	Tool        *string          `toml:"tool"`
	Mode        *string          `toml:"mode"`
	MaxTaint    *string          `toml:"max_taint"`
	ResultClass *string          `toml:"result_class"`
	Untrusted   *bool            `toml:"untrusted"`
	WhenUntrust *string          `toml:"when_untrusted"`
	Expires     any              `toml:"expires"`
	Secret      *string          `toml:"secret"`
	Constraints *constraintsFile `toml:"constraints"`
	Examples    []exampleFile    `toml:"examples"`
	Jobs        *[]string        `toml:"jobs"`
	Result      *string          `toml:"result"`
	Declassify  *bool            `toml:"declassify"`
}

type constraintsFile struct {
	Paths    []string `toml:"paths"`
	Hosts    []string `toml:"hosts"`
	Patterns []string `toml:"patterns"`
}

type exampleFile struct {
	Arguments *string `toml:"arguments"`
	Matches   *bool   `toml:"matches"`
}

// keyTypes says what each key holds, for type mismatches go-toml reports.
var keyTypes = map[string]string{
	"tool": "a string", "mode": "a string", "max_taint": "a string", "result_class": "a string",
	"untrusted": "true or false", "when_untrusted": `"ask" or "deny"`, "secret": "a string", "constraints": "a table",
	"constraints.paths": "an array of strings", "constraints.hosts": "an array of strings",
	"constraints.patterns": "an array of strings", "examples": "an array of tables ([[examples]])",
	"examples.arguments": "a string", "examples.matches": "true or false",
	"jobs": "an array of job ids", "result": `"content" or "handle"`, "declassify": "true or false",
}

// ParseGrant parses and checks one grant file. file is its name or path:
// the id is its stem, and errors name it. The error is a *GrantError that
// lists every problem found, with its line where known.
func ParseGrant(file string, data []byte) (Grant, error) {
	id := strings.TrimSuffix(filepath.Base(file), ".toml")
	var probs []Problem
	if err := checkID(id); err != nil {
		probs = append(probs, Problem{Reason: err.Error()})
	}
	var f grantFile
	if bad := DecodeFile(data, &f, keyTypes); bad != nil {
		return Grant{}, &GrantError{File: file, Problems: append(probs, bad...)}
	}
	g, found := buildGrant(id, f)
	probs = append(probs, LineProblems(data, found)...)
	if len(probs) > 0 {
		return Grant{}, &GrantError{File: file, Problems: probs}
	}
	return g, nil
}

func checkID(id string) error {
	if id == "" || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("grant id %q (the file name without .toml) must be one or more of [a-z0-9-]", id)
	}
	return nil
}

// tomlProblems turns go-toml's errors into problems with lines; types says
// what each key of the file holds.
func tomlProblems(err error, types map[string]string) []Problem {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var probs []Problem
		for _, e := range strict.Errors {
			line, _ := e.Position()
			probs = append(probs, Problem{Line: line, Reason: "unknown key " + strings.Join(e.Key(), ".")})
		}
		return probs
	}
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return []Problem{{Reason: err.Error()}}
	}
	line, _ := de.Position()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	key := strings.Join(de.Key(), ".")
	if want, ok := types[key]; ok && strings.HasPrefix(msg, "cannot decode") {
		return []Problem{{Line: line, Reason: fmt.Sprintf("%s must be %s", key, want)}}
	}
	// The line is in the reason, where `grants check` readers look for it.
	return []Problem{{Reason: fmt.Sprintf("TOML syntax error on line %d: %s", line, msg)}}
}

// buildGrant checks every field of f and returns the grant, or every
// problem found.
func buildGrant(id string, f grantFile) (Grant, []problem) {
	g := Grant{id: id, resultClass: wire.Private, untrusted: true}
	var c collector
	toolOK := g.setRequired(f, &c)
	g.setOptional(f, &c)
	if toolOK {
		c.probs = append(c.probs, g.setConstraints(f)...)
	}
	return g, c.probs
}

// collector gathers problems, so that one run of `grants check` shows all
// of a file's mistakes.
type collector struct{ probs []problem }

func (c *collector) add(key string, err error) {
	if err != nil {
		c.probs = append(c.probs, problem{key, err.Error()})
	}
}

// setRequired sets tool, mode and max_taint; it reports whether the tool is
// known, without which the constraints cannot be checked.
func (g *Grant) setRequired(f grantFile, c *collector) bool {
	var err error
	toolOK := false
	switch {
	case f.Tool == nil:
		c.add("tool", errors.New("tool is required"))
	default:
		g.tool, toolOK = wire.ToolByName(*f.Tool)
		if !toolOK {
			c.add("tool", fmt.Errorf("no tool named %s; the tools are %s", nameText(*f.Tool), strings.Join(wire.ToolNames(), ", ")))
		}
	}
	if f.Mode == nil {
		c.add("mode", errors.New("mode is required"))
	} else {
		g.mode, err = ParseMode(*f.Mode)
		c.add("mode", err)
	}
	if f.MaxTaint == nil {
		c.add("max_taint", errors.New("max_taint is required"))
	} else {
		g.maxTaint, err = parseClass("max_taint", *f.MaxTaint)
		c.add("max_taint", err)
	}
	return toolOK
}

// setOptional sets the keys that have defaults or may be absent.
func (g *Grant) setOptional(f grantFile, c *collector) {
	var err error
	if f.ResultClass != nil {
		g.resultClass, err = parseClass("result_class", *f.ResultClass)
		c.add("result_class", err)
	}
	if f.Untrusted != nil {
		g.untrusted = *f.Untrusted
	}
	if f.WhenUntrust != nil {
		g.whenUntrusted, err = parseUntrustedRule(*f.WhenUntrust)
		c.add("when_untrusted", err)
		if err == nil && g.mode == Deny {
			c.add("when_untrusted", errors.New("when_untrusted applies to auto and ask grants; a deny grant denies in every session: remove when_untrusted"))
		}
	}
	g.expires, g.hasExpiry, err = parseExpires(f.Expires)
	c.add("expires", err)
	if f.Secret != nil {
		g.secret = *f.Secret
		c.add("secret", checkSecretName(g.secret))
	}
	if f.Jobs != nil {
		g.jobs, err = parseGrantJobs(*f.Jobs)
		c.add("jobs", err)
	}
	g.setHandleKeys(f, c)
}

// nameText writes a plain name as it is and anything else quoted.
func nameText(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == "" {
		return s
	}
	return fmt.Sprintf("%q", s)
}

func parseClass(key, s string) (wire.DataClass, error) {
	c, err := wire.ParseDataClass(s)
	if err != nil {
		return 0, fmt.Errorf("%s must be public, private or secret, not %q", key, s)
	}
	return c, nil
}

// parseExpires accepts only a TOML offset date-time: a local one would mean
// a different instant in each time zone the host might be set to.
func parseExpires(v any) (wire.Timestamp, bool, error) {
	switch v := v.(type) {
	case nil:
		return 0, false, nil
	case time.Time:
		// Milliseconds are cut, never rounded up: a grant ends early, not late.
		ts, err := wire.TimestampOf(v)
		if err != nil {
			return 0, false, fmt.Errorf("expires: %v", err)
		}
		return ts, true, nil
	case toml.LocalDateTime:
		return 0, false, fmt.Errorf("expires needs a UTC offset: write %sZ, or %s+01:00 for an hour east of UTC", v, v)
	case toml.LocalDate:
		return 0, false, fmt.Errorf("expires needs a time and a UTC offset: write %sT00:00:00Z", v)
	case toml.LocalTime:
		return 0, false, errors.New("expires needs a date, a time and a UTC offset, as 2026-12-31T00:00:00Z")
	case string:
		return 0, false, fmt.Errorf("expires is a TOML date-time, not a string: write it without quotes, as 2026-12-31T00:00:00Z")
	default:
		return 0, false, fmt.Errorf("expires is a TOML date-time with a UTC offset, as 2026-12-31T00:00:00Z, not %s", tomlKind(v))
	}
}

// tomlKind names the TOML type go-toml decoded v from.
func tomlKind(v any) string {
	switch v.(type) {
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// checkSecretName keeps the name a plain file name inside secrets/.
func checkSecretName(s string) error {
	if s == "" || len(s) > 64 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("secret %q must be 1 to 64 characters of [a-z0-9-], the name of a file in secrets/", s)
	}
	return nil
}

// setConstraints compiles the constraints and proves the examples against
// them; examples are not tried against constraints that failed.
func (g *Grant) setConstraints(f grantFile) []problem {
	if f.Constraints != nil {
		g.constraints = Constraints(*f.Constraints)
	}
	m, probs := compileConstraints(g.tool, g.mode, g.constraints)
	examples, more := checkExampleFields(f.Examples)
	probs = append(probs, more...)
	if len(probs) > 0 {
		return probs
	}
	g.matcher = m
	return checkExamples(g.tool, m, examples)
}

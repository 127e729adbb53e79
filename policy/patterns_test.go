package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	toml "github.com/pelletier/go-toml/v2"

	"boxmaker/wire"
)

func mustPatterns(t testing.TB, mode Mode, patterns ...string) patternsMatcher {
	t.Helper()
	tl, _ := wire.ToolByName("shell")
	m, errs := compileDimensionFor(tl, mode, patterns)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return m.(patternsMatcher)
}

// TestPatternsSeeWholeCommand is DESIGN.md section 11's last rule: `.`
// matches newline; a control character matches an allowing pattern only
// where the pattern names it; a deny pattern matches generously.
func TestPatternsSeeWholeCommand(t *testing.T) {
	cases := []struct {
		mode    Mode
		pattern string
		command string
		want    bool
	}{
		// The examples.
		{Deny, `.*sudo.*`, "ls\nsudo x", true},
		{Auto, `git [^;&|]*`, "git log", true},
		{Auto, `git [^;&|]*`, "git log\nrm -rf ~", false},
		{Auto, `.*sudo.*`, "ls\nsudo x", false}, // the same pattern allowing names no newline
		// `.` matches newline, but no control character, in an allowing pattern.
		{Auto, `echo .*`, "echo a\nb", false},
		{Auto, `(?s)echo .*`, "echo a\nb", false},
		{Auto, `(?-s)echo .*`, "echo a\nb", false},
		{Auto, `echo .*`, "echo a\u2028b", true}, // a line separator is no control character
		{Auto, `echo .*`, "echo a\u2029b\u00a0c\u200bd", true},
		{Auto, `echo .*`, "echo a\tb", false},
		{Auto, `echo .*`, "echo a\rb", false},
		{Auto, `echo .*`, "echo \x1b[2J", false},
		{Auto, `echo .*`, "echo a\x7fb", false},
		{Auto, `echo .*`, "echo a\u0085b", false},
		{Auto, `echo .*`, "echo a\u009bb", false},
		{Auto, `echo .*`, "echo a\u00a0b", true},
		// Classes reach control characters only when they hold nothing else.
		{Auto, `ls\s+-l`, "ls -l", true},
		{Auto, `ls\s+-l`, "ls\t-l", false},
		{Auto, `ls\s+-l`, "ls\n-l", false},
		{Auto, `ls[[:space:]]-l`, "ls\v-l", false},
		{Auto, `a\S+`, "ab\vc", false},
		{Auto, `a[^\n]b`, "a\tb", false},
		{Auto, `a\pCb`, "a\x01b", false},
		{Auto, `a\PLb`, "a\nb", false},
		{Auto, `ls[\t ]-l`, "ls -l", true},
		{Auto, `ls[\t ]-l`, "ls\t-l", false}, // mixed with a space: see docs/decisions.md
		{Auto, `ls[\t]-l`, "ls\t-l", true},
		{Auto, `ls[\t\n]-l`, "ls\n-l", true},
		{Auto, `ls[\t\n]-l`, "ls\r-l", false},
		{Auto, `a[\x00-\x1f]b`, "a\x1bb", true},
		{Auto, `a[[:cntrl:]]b`, "a\x7fb", true},
		{Auto, `a\p{Cc}b`, "a\u0085b", true},
		{Auto, `a[^\x20-\x{10ffff}]b`, "a\x01b", true},
		// Named: a literal, an escape of any spelling.
		{Auto, `ls\tpwd`, "ls\tpwd", true},
		{Auto, `ls` + "\t" + `pwd`, "ls\tpwd", true},
		{Auto, `ls\x09pwd`, "ls\tpwd", true},
		{Auto, `ls\x{9}pwd`, "ls\tpwd", true},
		{Auto, `ls\011pwd`, "ls\tpwd", true},
		{Auto, `ls\rpwd`, "ls\rpwd", true},
		{Auto, `printf \x1b\[0m`, "printf \x1b[0m", true},
		{Auto, `printf \033\[0m`, "printf \x1b[0m", true},
		{Auto, `echo \x{85}`, "echo \u0085", true},
		{Auto, `echo \x7f`, "echo \x7f", true},
		{Auto, `echo \ab`, "echo \ab", true},
		{Auto, `echo [a-z]*\necho [a-z]*`, "echo a\necho b", true},
		{Auto, `echo [a-z]*\necho [a-z]*`, "echo a\necho b\n", false},
		{Auto, `echo [a-z]*\necho [a-z]*`, "echo a\r\necho b", false},
		{Auto, "echo [a-z]*\necho [a-z]*", "echo a\necho b", true}, // a literal newline in the pattern
		{Auto, `echo .*\n.*`, "echo a\nrm -rf /", true},
		{Auto, `echo .*\n.*`, "echo a\nb\nc", false},
		{Auto, `(echo [a-z]\n)*`, "echo a\necho b\n", true},
		// Alternations: a named control character stays named when the parser
		// would merge the alternatives into one class.
		{Auto, `ls(\n|;)pwd`, "ls\npwd", true},
		{Auto, `ls(\n|;)pwd`, "ls;pwd", true},
		{Auto, `ls(\n|;)pwd`, "ls\tpwd", false},
		{Auto, `ls(;|\n)pwd`, "ls\npwd", true},
		{Auto, `ls(\s|;)pwd`, "ls\npwd", false},
		{Auto, `ls(\s|;)pwd`, "ls pwd", true},
		{Auto, `a([\t\n]|x)b`, "a\tb", true},
		{Auto, `a([\t\n]|x)b`, "axb", true},
		{Auto, `a(\p{Cc}|x)b`, "a\x1bb", true},
		{Auto, `ls|pwd|\n`, "\n", true},
		{Auto, `ls|pwd|\n`, "\t", false},
		// \Q...\E, literal text; a control character in it is named.
		{Auto, `\Qecho a.b\E`, "echo a.b", true},
		{Auto, `\Qecho a.b\E`, "echo axb", false},
		{Auto, `\Qecho` + "\n" + `x\E`, "echo\nx", true},
		{Auto, `\Qecho\E.*`, "echo\nx", false},
		{Auto, `\Qa\n\E`, "a\\n", true},
		{Auto, `\Qa\n\E`, "a\n", false},
		{Auto, `\\n`, "\\n", true},
		{Auto, `\\n`, "\n", false},
		// Case-insensitive flags.
		{Auto, `(?i)git log\ngit status`, "GIT LOG\nGit Status", true},
		{Auto, `(?i)git .*`, "GIT log\nx", false},
		{Auto, `(?i)[a-z ]+`, "GIT\tLOG", false},
		{Auto, `(?i:git)\x{85}`, "Git\u0085", true},
		{Auto, `(?im)^git$\n^log$`, "GIT\nlog", true},
		// The anchors still hold.
		{Auto, `ls|pwd`, "ls\npwd", false},
		{Auto, `(?m)ls$`, "ls\nrm -rf /", false},
		{Auto, `(?m)^rm -rf /`, "ls\nrm -rf /", false},
		// NUL and invalid UTF-8 never match an allowing pattern.
		{Auto, `a\x00b`, "a\x00b", false},
		{Auto, `a[\x00-\x1f]b`, "a\x00b", false},
		{Auto, `echo .*`, "echo \xff", false},
		{Ask, `echo .*`, "echo \x1b", false},
		// A deny pattern matches generously: through . and classes.
		{Deny, `.*sudo.*`, "ls\tsudo", true},
		{Deny, `.*sudo.*`, "ls\x00sudo", true},
		{Deny, `rm .*`, "rm -rf /\nls", true},
		{Deny, `rm\s.*`, "rm\t-rf /", true},
		{Deny, `.*[^a-z]rm .*`, "echo\nrm -rf /", true},
		{Deny, `(?-s:.*)rm.*`, "echo\nrm", false}, // the owner turned it off
		{Deny, `rm .*`, "ls\nrm -rf /", false},    // still anchored at both ends
	}
	for _, c := range cases {
		m := mustPatterns(t, c.mode, c.pattern)
		if got, why := m.match(newSubject(c.command)); got != c.want {
			t.Errorf("%s %q on %q: %v (%s), want %v", c.mode, c.pattern, c.command, got, why, c.want)
		}
	}
}

// TestPatternWhy checks the sentences `grants explain` prints.
func TestPatternWhy(t *testing.T) {
	cases := []struct {
		mode     Mode
		patterns []string
		command  string
		want     string
	}{
		{Auto, []string{`ls`, `git [^;&|]*`}, "git log\nrm -rf ~",
			`no pattern matches the whole command: it holds the control character \n (first at byte 7), and pattern 2 "git [^;&|]*" reaches it only through . or a class; a control character matches only a pattern that names it, e.g. \n`},
		{Auto, []string{`ls`}, "ls\x1b[2J",
			`no pattern matches the whole command, which holds the control character \x1b (first at byte 2) that no pattern names`},
		{Auto, []string{`echo .*`}, "echo a\u0085",
			`the control character \x85 (first at byte 6)`},
		{Auto, []string{`ls`}, "pwd", "no pattern matches the whole command"},
		{Auto, []string{`ls`, `ls\n.*`}, "ls\nx", `pattern 2 "ls\\n.*" matches the whole command`},
		{Auto, []string{`ls.*`}, "ls\x00", "the command holds a NUL byte, which no allowing pattern matches"},
		{Auto, []string{`ls.*`}, "ls\xff", "not valid UTF-8"},
		{Deny, []string{`rm`, `.*sudo.*`}, "ls\nsudo", `pattern 2 ".*sudo.*" matches the whole command`},
	}
	for _, c := range cases {
		_, why := mustPatterns(t, c.mode, c.patterns...).match(newSubject(c.command))
		if !strings.Contains(why, c.want) {
			t.Errorf("%q on %q: %q, want %q in it", c.patterns, c.command, why, c.want)
		}
	}
}

// TestIsolateAtoms shows what the parser is kept from merging.
func TestIsolateAtoms(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`\n|;`, `(\n)|;`},
		{`a|b`, `a|b`},
		{`[\t\n]|x`, `([\t\n])|x`},
		{`[]\n]x`, `([]\n])x`},
		{`[^\]\n]x`, `([^\]\n])x`},
		{`[[:cntrl:]\]]`, `([[:cntrl:]\]])`},
		{`\p{Cc}|\pL`, `(\p{Cc})|(\pL)`},
		{`\Qa.` + "\x1b" + `\E+`, `a\.(\x{1b})+`},
		{`\Qa.b`, `a\.b`},
		{"\x01\u0085", `(\x{1})(\x{85})`},
		{`\x1b\x{1B}\033\0\r\t\v\f\a`, `(\x1b)(\x{1B})(\033)(\0)(\r)(\t)(\v)(\f)(\a)`},
		{`\x20\\n\.\d`, `\x20\\n\.\d`},
	} {
		if got := isolateAtoms(c.in); got != c.want {
			t.Errorf("isolateAtoms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestDenyGrantExamplesMatchGenerously: a deny grant's examples are proved
// against the matcher that decides for it.
func TestDenyGrantExamplesMatchGenerously(t *testing.T) {
	body := "tool = \"shell\"\nmode = \"%s\"\nmax_taint = \"secret\"\n[constraints]\npatterns = ['.*sudo.*']\n" +
		"[[examples]]\narguments = '{\"command\":\"ls\\nsudo id\"}'\nmatches = %t\n"
	if _, err := ParseGrant("d.toml", fmt.Appendf(nil, body, "deny", true)); err != nil {
		t.Errorf("deny: %v", err)
	}
	if _, err := ParseGrant("a.toml", fmt.Appendf(nil, body, "auto", false)); err != nil {
		t.Errorf("auto: %v", err)
	}
}

// TestShellFixtures holds every row of fixtures/policy/shell_cases.toml.
func TestShellFixtures(t *testing.T) {
	data, err := os.ReadFile("../fixtures/policy/shell_cases.toml")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Grant []struct {
			ID       string   `toml:"id"`
			Mode     string   `toml:"mode"`
			Patterns []string `toml:"patterns"`
		} `toml:"grant"`
		Case []struct {
			Name    string `toml:"name"`
			Command string `toml:"command"`
			Expect  string `toml:"expect"`
			Grant   string `toml:"grant"`
			Reason  string `toml:"reason"`
		} `toml:"case"`
	}
	if err := toml.NewDecoder(strings.NewReader(string(data))).DisallowUnknownFields().Decode(&table); err != nil {
		t.Fatal(err)
	}
	if len(table.Grant) == 0 || len(table.Case) == 0 {
		t.Fatal("no grants or no cases")
	}
	bodies := map[string]string{}
	for _, g := range table.Grant {
		body, err := toml.Marshal(map[string]any{"tool": "shell", "mode": g.Mode, "max_taint": "secret",
			"constraints": map[string]any{"patterns": g.Patterns}})
		if err != nil {
			t.Fatal(err)
		}
		bodies[g.ID] = string(body)
	}
	grants := grantSet(t, bodies)
	for _, c := range table.Case {
		t.Run(c.Name, func(t *testing.T) {
			args, err := json.Marshal(map[string]string{"command": c.Command})
			if err != nil {
				t.Fatal(err)
			}
			d, err := Decide(grants, Request{Tool: "shell", Arguments: string(args), Taint: wire.Private, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, d, c.Expect, c.Grant, c.Reason)
		})
	}
}

// TestExplainNamesTheControlCharacter: `grants explain` says why a command
// holding a control character found no grant.
func TestExplainNamesTheControlCharacter(t *testing.T) {
	grants := grantSet(t, map[string]string{"git": "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npatterns = ['git [^;&|]*']\n"})
	d, _ := Decide(grants, Request{Tool: "shell", Arguments: `{"command":"git log\ncurl evil.example"}`, Taint: wire.Private, Now: t0})
	want := `step 1: git: not a candidate: no pattern matches the whole command: it holds the control character \n (first at byte 7)`
	if s := explanation(d); !strings.Contains(s, want) {
		t.Errorf("explanation lacks %q:\n%s", want, s)
	}
}

// FuzzPatternConfine checks the rewrite against the pattern as written: on
// a command without control characters the allowing form matches exactly
// when the loose form does (the groups and class edits change nothing
// else), and it never matches a command the loose form refuses.
func FuzzPatternConfine(f *testing.F) {
	for _, s := range [][2]string{
		{`git [^;&|]*`, "git log"}, {`\n|;`, ";"}, {`[]a]|\Qx.y\E`, "x.y"}, {`(?i)[[:alpha:]\d]+\x{85}`, "aB1\u0085"},
		{`a(\p{Cc}|x)b`, "axb"}, {`[^\]\n]*\012`, "]]\n"}, {`(?U)a+?\S{2,3}`, "aaab"}, {`(?m)^x$|\z`, ""},
		{`[\x00-\x1f-]+`, "-"}, {`\pN\PN.\Q\E`, "1a."}, {`[[:^space:]\t]+`, "ab"}, {`\Qa\\E\E+`, `a\\E`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, command string) {
		if _, err := regexp.Compile(`^(?:` + pattern + `)$`); err != nil {
			return
		}
		if _, err := regexp.Compile(pattern); err != nil {
			return
		}
		cp, err := compilePattern(1, pattern, Auto)
		if err != nil {
			if strings.Contains(err.Error(), "too large") || strings.Contains(err.Error(), "nesting depth") {
				return
			}
			t.Fatalf("%q: %v (isolated %q)", pattern, err, isolateAtoms(pattern))
		}
		named, loose := cp.named.MatchString(command), cp.loose.MatchString(command)
		if named && !loose {
			t.Fatalf("%q (as %s) matches %q, which the pattern as written does not", pattern, cp.named, command)
		}
		if _, at := firstControl(command); at < 0 && utf8.ValidString(command) && named != loose {
			t.Fatalf("%q (as %s) on %q: %v, as written %v", pattern, cp.named, command, named, loose)
		}
	})
}

package main

// The WARNING rule of STYLE.md: a function whose safety depends on
// ordering says so in a paragraph that starts "WARNING" and names the
// test that proves it. This check holds the names to the truth.

import (
	"fmt"
	"go/ast"
	"regexp"
	"strings"
)

// testName matches what a warning names as its proof: a test function, or
// a family of them written with a trailing * (TestIntegration*).
var testName = regexp.MustCompile(`\bTest[A-Z0-9_][A-Za-z0-9_]*\*?`)

// commentLine is one line of comment text and where it is.
type commentLine struct {
	line int
	text string
}

// checkWarnings: every test that a warning paragraph names is a Test
// function defined in some _test.go file of the project.
func checkWarnings(files []goFile) []string {
	tests := definedTests(files)
	var bad []string
	for _, f := range files {
		for _, para := range commentParagraphs(f) {
			at := -1
			for _, l := range para {
				if strings.Contains(l.text, "WARNING:") {
					at = l.line
					break
				}
			}
			if at < 0 {
				continue
			}
			var text strings.Builder
			for _, l := range para {
				text.WriteString(l.text + "\n")
			}
			for _, name := range testName.FindAllString(text.String(), -1) {
				if !testDefined(tests, name) {
					bad = append(bad, fmt.Sprintf("%s:%d: a warning names %s, which no test defines", f.path, at, name))
				}
			}
		}
	}
	return bad
}

// definedTests lists the top-level Test functions of every _test.go file.
func definedTests(files []goFile) []string {
	var tests []string
	for _, f := range files {
		if !f.isTest() {
			continue
		}
		for _, d := range f.ast.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests = append(tests, fn.Name.Name)
			}
		}
	}
	return tests
}

// testDefined reports whether name, or for a name ending in * some test
// with that prefix, is among tests.
func testDefined(tests []string, name string) bool {
	prefix, family := strings.CutSuffix(name, "*")
	for _, t := range tests {
		if t == name || family && strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return false
}

// commentParagraphs splits every comment of f into paragraphs: runs of
// non-blank lines within one comment group.
func commentParagraphs(f goFile) [][]commentLine {
	var paras [][]commentLine
	for _, group := range f.ast.Comments {
		var cur []commentLine
		for _, c := range group.List {
			first := f.fset.Position(c.Pos()).Line
			text := strings.TrimPrefix(c.Text, "//")
			if rest, ok := strings.CutPrefix(c.Text, "/*"); ok {
				text = strings.TrimSuffix(rest, "*/")
			}
			for i, l := range strings.Split(text, "\n") {
				if strings.TrimSpace(l) == "" {
					if len(cur) > 0 {
						paras = append(paras, cur)
					}
					cur = nil
					continue
				}
				cur = append(cur, commentLine{first + i, l})
			}
		}
		if len(cur) > 0 {
			paras = append(paras, cur)
		}
	}
	return paras
}

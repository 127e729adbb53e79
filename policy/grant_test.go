package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	"boxmaker/wire"
)

const (
	validDir   = "../fixtures/grants/valid"
	invalidDir = "../fixtures/grants/invalid"
)

func loadValid(t testing.TB) []Grant {
	t.Helper()
	grants, bad, err := LoadDir(validDir)
	if err != nil || len(bad) > 0 {
		t.Fatalf("LoadDir(%s): %v %v", validDir, err, bad)
	}
	return grants
}

func TestValidFixturesParse(t *testing.T) {
	grants := loadValid(t)
	var ids []string
	for _, g := range grants {
		ids = append(ids, g.ID())
	}
	want := []string{"consult-ask", "fetch-ask", "fetch-docs", "notes", "notes-secret", "old-hostname", "shell-deny", "shell-git"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	byID := map[string]Grant{}
	for _, g := range grants {
		byID[g.ID()] = g
	}
	check := func(id string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %v, want %v", id, got, want)
		}
	}
	fd := byID["fetch-docs"]
	check("fetch-docs tool", fd.Tool(), "http_fetch")
	check("fetch-docs mode", fd.Mode(), Auto)
	check("fetch-docs max_taint", fd.MaxTaint(), wire.Private)
	check("fetch-docs result_class", fd.ResultClass(), wire.Public)
	check("fetch-docs untrusted", fd.Untrusted(), true)
	check("fetch-docs hosts", strings.Join(fd.Constraints().Hosts, ","), "docs.python.org,*.wikipedia.org")
	ca := byID["consult-ask"]
	secret, ok := ca.Secret()
	check("consult-ask secret", secret+" "+map[bool]string{true: "set"}[ok], "consult-api-key set")
	check("consult-ask untrusted defaults to true", ca.Untrusted(), true)
	notes := byID["notes"]
	check("notes result_class defaults to private", notes.ResultClass(), wire.Private)
	check("notes untrusted", notes.Untrusted(), false)
	exp, ok := byID["old-hostname"].Expires()
	check("old-hostname expires", exp.String()+map[bool]string{true: " set"}[ok], "2026-01-01T00:00:00.000Z set")
	if _, ok := fd.Expires(); ok {
		t.Error("fetch-docs has no expiry")
	}
}

type invalidCase struct {
	File  string `toml:"file"`
	Error string `toml:"error"`
}

func readInvalidCases(t *testing.T) []invalidCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(invalidDir, "cases.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Case []invalidCase `toml:"case"`
	}
	if err := toml.NewDecoder(strings.NewReader(string(data))).DisallowUnknownFields().Decode(&table); err != nil {
		t.Fatal(err)
	}
	return table.Case
}

// The fixture files are named with underscores, which no grant id has, so
// each is also parsed under a valid id: the gist must come from the content.
func TestInvalidFixturesFailWithTheirGist(t *testing.T) {
	cases := readInvalidCases(t)
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			path := filepath.Join(invalidDir, c.File)
			_, err := LoadFile(path)
			if err == nil || !strings.Contains(err.Error(), c.Error) || !strings.Contains(err.Error(), path) {
				t.Errorf("LoadFile: error %q, want it to name %s and say %q", err, path, c.Error)
			}
			data, _ := os.ReadFile(path)
			stem := strings.ReplaceAll(strings.TrimSuffix(c.File, ".toml"), "_", "-")
			_, err = ParseGrant(stem+".toml", data)
			if err == nil || !strings.Contains(err.Error(), c.Error) || strings.Contains(err.Error(), "grant id") {
				t.Errorf("ParseGrant under a valid id: error %q, want %q alone", err, c.Error)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(invalidDir, "*.toml"))
	for _, f := range files {
		name := filepath.Base(f)
		if name != "cases.toml" && !slices.ContainsFunc(cases, func(c invalidCase) bool { return c.File == name }) {
			t.Errorf("%s has no case in cases.toml", name)
		}
	}
}

func TestLoadDirSeparatesBadFiles(t *testing.T) {
	grants, bad, err := LoadDir(invalidDir)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(invalidDir, "*.toml"))
	if len(grants) != 0 || len(bad) != len(files) {
		t.Fatalf("%d grants and %d errors from %d files", len(grants), len(bad), len(files))
	}
	var names []string
	for _, err := range bad {
		var ge *GrantError
		if !errors.As(err, &ge) {
			t.Fatalf("%v is not a *GrantError", err)
		}
		names = append(names, strings.TrimSuffix(filepath.Base(ge.File), ".toml"))
	}
	if !slices.IsSorted(names) {
		t.Errorf("errors not sorted by id: %v", names)
	}
	if _, _, err := LoadDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("LoadDir of a missing directory: no error")
	}
}

func TestLoadDirKeepsGoodGrantsBesideBadOnes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.toml", "tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"private\"\n")
	write("a-b.toml", "tool = \"consult\"\nmode = \"ask\"\nmax_taint = \"private\"\n")
	write("b.toml", "tool = \"consult\"\nmode = \"sometimes\"\nmax_taint = \"private\"\n")
	write("README", "not a grant")
	grants, bad, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != 2 || grants[0].ID() != "a" || grants[1].ID() != "a-b" {
		t.Errorf("grants %v, want a then a-b (id order, not file name order)", grants)
	}
	if len(bad) != 1 || !strings.Contains(bad[0].Error(), "b.toml:2: mode must be auto, ask or deny") {
		t.Errorf("bad = %v", bad)
	}
}

func TestGrantErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"unknown_key.toml":     "unknown_key.toml:4: unknown key max_tain",
		"bad_mode.toml":        "bad_mode.toml:2: mode must be auto, ask or deny",
		"bad_class.toml":       "bad_class.toml:3: max_taint must be public, private or secret",
		"local_datetime.toml":  "local_datetime.toml:4: expires needs a UTC offset",
		"bad_host.toml":        "bad_host.toml:5: host \"https://a.example/path\"",
		"wrong_dimension.toml": "wrong_dimension.toml:5: notes_read takes no hosts constraint",
		"not_toml.toml":        "not_toml.toml: TOML syntax error on line 1",
		"missing_tool.toml":    "missing_tool.toml: tool is required",
	}
	for file, want := range cases {
		_, err := LoadFile(filepath.Join(invalidDir, file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want %q", file, err, want)
		}
	}
}

// bad is a grant file body with the gist its error must carry.
type bad struct {
	name, body, want string
}

const head = "mode = \"auto\"\nmax_taint = \"private\"\n"

func TestGrantErrors(t *testing.T) {
	cases := []bad{
		{"duplicate key", "tool = \"consult\"\ntool = \"shell\"\n" + head, "TOML syntax error on line 2"},
		{"mode not a string", "tool = \"consult\"\nmode = 3\nmax_taint = \"private\"\n", "mode must be a string"},
		{"untrusted a string", "tool = \"consult\"\n" + head + "untrusted = \"false\"\n", "untrusted must be true or false"},
		{"result_class", "tool = \"consult\"\n" + head + "result_class = \"top\"\n", "result_class must be public, private or secret"},
		{"missing mode", "tool = \"consult\"\nmax_taint = \"private\"\n", "mode is required"},
		{"local date", "tool = \"consult\"\n" + head + "expires = 2026-12-31\n", "expires needs a time and a UTC offset"},
		{"local time", "tool = \"consult\"\n" + head + "expires = 10:00:00\n", "expires needs a date, a time and a UTC offset"},
		{"integer expiry", "tool = \"consult\"\n" + head + "expires = 1\n", "expires is a TOML date-time with a UTC offset, as 2026-12-31T00:00:00Z, not an integer"},
		{"table expiry", "tool = \"consult\"\n" + head + "[expires]\nat = 1\n", "not a table"},
		{"expiry before 1970", "tool = \"consult\"\n" + head + "expires = 1969-12-31T00:00:00Z\n", "outside 1970 to 9999"},
		{"secret path", "tool = \"consult\"\n" + head + "secret = \"../key\"\n", "secret \"../key\" must be"},
		{"unknown constraint key", "tool = \"consult\"\n" + head + "[constraints]\nport = 1\n", "unknown key constraints.port"},
		{"hosts not a list", "tool = \"http_fetch\"\n" + head + "[constraints]\nhosts = \"a.example\"\n", "constraints.hosts must be an array of strings"},
		{"empty list on a tool without dimension", "tool = \"consult\"\n" + head + "[constraints]\nhosts = []\n", "consult takes no hosts constraint"},
		{"patterns on http_fetch", "tool = \"http_fetch\"\n" + head + "[constraints]\nhosts = [\"a.example\"]\npatterns = [\".*\"]\n", "http_fetch takes no patterns constraint"},
		{"empty patterns", "tool = \"shell\"\n" + head + "[constraints]\npatterns = []\n", "shell needs a patterns constraint; an empty list matches nothing"},
		{"empty paths", "tool = \"file_read\"\n" + head, "file_read needs a paths constraint; an empty list matches nothing"},
		{"second pattern", "tool = \"shell\"\n" + head + "[constraints]\npatterns = [\"ls\", \"a[\"]\n", "pattern 2 is not a valid RE2 expression"},
		{"unterminated \\Q", "tool = \"shell\"\n" + head + "[constraints]\npatterns = ['\\Q)|(.*']\n", "pattern 1 is not a valid RE2 expression once anchored"},
		{"relative file_read path", "tool = \"file_read\"\n" + head + "[constraints]\npaths = [\"etc/hostname\"]\n", "file_read paths are absolute"},
		{"unclean file_read path", "tool = \"file_read\"\n" + head + "[constraints]\npaths = [\"/etc//hostname\"]\n", "is not in clean form; write \"/etc/hostname\""},
		{"file_read root", "tool = \"file_read\"\n" + head + "[constraints]\npaths = [\"/\"]\n", "names the root itself"},
		{"escaping file_read path", "tool = \"file_read\"\n" + head + "[constraints]\npaths = [\"/../etc\"]\n", "leaves its root"},
		{"absolute notes path", "tool = \"notes_read\"\n" + head + "[constraints]\npaths = [\"/etc\"]\n", notesPathRule},
		{"notes path escaping midway", "tool = \"notes_write\"\n" + head + "[constraints]\npaths = [\"notes/../../x\"]\n", notesPathRule},
		{"unclean notes path", "tool = \"notes_read\"\n" + head + "[constraints]\npaths = [\"./notes/\"]\n", "write \"notes\""},
		{"notes root", "tool = \"notes_read\"\n" + head + "[constraints]\npaths = [\".\"]\n", "names the root itself"},
		{"empty notes path", "tool = \"notes_read\"\n" + head + "[constraints]\npaths = [\"\"]\n", "names the root itself"},
		{"example without matches", "tool = \"consult\"\n" + head + "[[examples]]\narguments = '{\"prompt\":\"x\"}'\n", "example 1: matches is required"},
		{"example that does not parse", "tool = \"consult\"\n" + head + "[[examples]]\narguments = '{\"prompt\":1}'\nmatches = false\n", "example 1: consult arguments: invalid value"},
		{"example that does not hold", "tool = \"shell\"\n" + head + "[constraints]\npatterns = [\"git status\"]\n[[examples]]\narguments = '{\"command\":\"git status\"}'\nmatches = true\n[[examples]]\narguments = '{\"command\":\"git status; rm -rf /\"}'\nmatches = true\n", "example 2 does not hold"},
		{"bad id", "", "grant id \"Bad_Name\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := "x.toml"
			if c.name == "bad id" {
				file, c.body = "Bad_Name.toml", "tool = \"consult\"\n"+head
			}
			_, err := ParseGrant(file, []byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q", err, c.want)
			}
		})
	}
}

func TestExamplesThatHoldAreValid(t *testing.T) {
	body := "tool = \"shell\"\n" + head + "[constraints]\npatterns = [\"git status\"]\n" +
		"[[examples]]\narguments = '{\"command\":\"git status\"}'\nmatches = true\n" +
		"[[examples]]\narguments = '{\"command\":\"git status; rm -rf /\"}'\nmatches = false\n"
	if _, err := ParseGrant("git.toml", []byte(body)); err != nil {
		t.Fatal(err)
	}
	_, err := ParseGrant("git.toml", []byte(strings.Replace(body, "matches = false", "matches = true", 1)))
	if err == nil || !strings.Contains(err.Error(), "git.toml:9: example 2 does not hold") {
		t.Errorf("error %q, want it to name line 9, its [[examples]] header", err)
	}
}

func TestExpiresAcceptsOffsets(t *testing.T) {
	g, err := ParseGrant("x.toml", []byte("tool = \"consult\"\n"+head+"expires = 2026-12-31T02:00:00.9999+02:00\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Sub-millisecond digits are cut, so the grant ends early, never late.
	if exp, _ := g.Expires(); exp.String() != "2026-12-31T00:00:00.999Z" {
		t.Errorf("expires %s", exp)
	}
}

func TestZeroGrantMatchesNothing(t *testing.T) {
	var g Grant
	if !g.IsZero() {
		t.Fatal("zero Grant is not IsZero")
	}
	if ok, _ := g.Covers(wire.ConsultArgs{Prompt: "x"}); ok {
		t.Error("zero Grant covers a call")
	}
	grants := loadValid(t)
	if ok, why := grants[0].Covers(wire.ShellArgs{Command: "x"}); ok {
		t.Errorf("consult grant covers shell arguments: %s", why)
	}
}

// FuzzParseGrant feeds grant files to the parser: it must never panic, and a
// grant it accepts must be usable by Decide.
func FuzzParseGrant(f *testing.F) {
	for _, dir := range []string{validDir, invalidDir} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
		for _, file := range files {
			data, _ := os.ReadFile(file)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGrant("fuzz.toml", data)
		if err != nil {
			return
		}
		if g.IsZero() || g.ID() != "fuzz" || !g.MaxTaint().Valid() || !g.ResultClass().Valid() {
			t.Fatalf("accepted an unusable grant: %+v", g)
		}
		if _, err := Decide([]Grant{g}, Request{Tool: g.Tool(), Arguments: `{"url":"https://a.example/"}`, Taint: wire.Secret, Now: 1}); err != nil {
			t.Fatal(err)
		}
	})
}

package wire

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// designTable is the design's table of tools (DESIGN.md sections 5, 6 and
// 12), one row each, in catalog order: the argument type, the dimension,
// what the sandbox holds, and one call with the subject it is matched by.
// The catalog must say exactly this; a new tool is a row here too.
var designTable = []struct {
	name      string
	args      reflect.Type
	dimension Dimension
	sandbox   Sandbox
	call      string // arguments of one call
	subject   string // what the call's dimension reads
}{
	{"http_fetch", reflect.TypeFor[HTTPFetchArgs](), HostsDimension,
		Sandbox{Egress: Egress{To: GrantHosts, Method: "GET"}}, `{"url":"https://a.example/"}`, "https://a.example/"},
	{"file_read", reflect.TypeFor[FileReadArgs](), AbsolutePathsDimension,
		Sandbox{Mount: MountCoveringEntry}, `{"path":"/etc/hostname"}`, "/etc/hostname"},
	{"notes_read", reflect.TypeFor[NotesReadArgs](), MemoryPathsDimension,
		Sandbox{Mount: MountNote}, `{"path":"notes/a.md"}`, "notes/a.md"},
	{"notes_write", reflect.TypeFor[NotesWriteArgs](), MemoryPathsDimension,
		Sandbox{Mount: MountWritableNoteEntry}, `{"path":"notes/a.md","content":"x"}`, "notes/a.md"},
	{"notes_search", reflect.TypeFor[NotesSearchArgs](), MemoryPathsDimension,
		Sandbox{Mount: MountGrantNotes}, `{"query":"q"}`, ""},
	{"shell", reflect.TypeFor[ShellArgs](), PatternsDimension,
		Sandbox{System: true}, `{"command":"git status"}`, "git status"},
	{"consult", reflect.TypeFor[ConsultArgs](), NoDimension,
		Sandbox{Egress: Egress{To: ConsultEndpoint, Method: "POST"}}, `{"prompt":"p"}`, ""},
	// brokerd answers inspect itself (InBroker): no sandbox (DESIGN.md section 15).
	{"inspect", reflect.TypeFor[InspectArgs](), NoDimension,
		Sandbox{}, `{"handle":"h1","question":"q?","answer":{"type":"bool"}}`, ""},
}

// argsTypeOf is the argument type the design table gives tool.
func argsTypeOf(t *testing.T, tool string) reflect.Type {
	t.Helper()
	for _, row := range designTable {
		if row.name == tool {
			return row.args
		}
	}
	t.Fatalf("%s is in the catalog but not in designTable", tool)
	return nil
}

func TestCatalogIsTheDesignTable(t *testing.T) {
	var want []string
	for _, row := range designTable {
		want = append(want, row.name)
	}
	if got := ToolNames(); !slices.Equal(got, want) {
		t.Fatalf("ToolNames() = %v, want %v", got, want)
	}
	for i, tool := range Tools() {
		row := designTable[i]
		if tool.Dimension != row.dimension {
			t.Errorf("%s: dimension %d, want %d", tool.Name, tool.Dimension, row.dimension)
		}
		if tool.Sandbox != row.sandbox {
			t.Errorf("%s: sandbox %+v, want %+v", tool.Name, tool.Sandbox, row.sandbox)
		}
		if tool.InBroker != (tool.Name == "inspect") {
			t.Errorf("%s: InBroker = %t; only inspect is answered by brokerd itself", tool.Name, tool.InBroker)
		}
		if tool.Description == "" || strings.Contains(tool.Description, "\n") {
			t.Errorf("%s: description %q is not one line", tool.Name, tool.Description)
		}
	}
}

// Only notes_search's paths are a scope rather than an argument, and only
// notes_write mounts its paths writable (DESIGN.md section 12): both follow
// from the mount kind, which must suit the dimension.
func TestScopedAndWritingTools(t *testing.T) {
	for _, tool := range Tools() {
		if got, want := tool.ScopedPaths(), tool.Name == "notes_search"; got != want {
			t.Errorf("%s: ScopedPaths() = %t, want %t", tool.Name, got, want)
		}
		if got, want := tool.WritesPaths(), tool.Name == "notes_write"; got != want {
			t.Errorf("%s: WritesPaths() = %t, want %t", tool.Name, got, want)
		}
		if (tool.ScopedPaths() || tool.WritesPaths()) && tool.Dimension.Key() != "paths" {
			t.Errorf("%s: scoped or writing paths need a paths dimension, not %d", tool.Name, tool.Dimension)
		}
	}
}

// mountDimensions is the dimension each mount kind reads its paths from.
var mountDimensions = map[MountKind]Dimension{
	MountCoveringEntry:     AbsolutePathsDimension,
	MountNote:              MemoryPathsDimension,
	MountGrantNotes:        MemoryPathsDimension,
	MountWritableNoteEntry: MemoryPathsDimension,
}

// A row's sandbox must be one brokerd can build from the grant: a mount of
// paths needs the paths dimension it reads, egress to the grant's hosts
// needs the hosts dimension, and egress has a method exactly when it has a
// target.
func TestSandboxSuitsTheDimension(t *testing.T) {
	for _, tool := range Tools() {
		sb := tool.Sandbox
		if want, ok := mountDimensions[sb.Mount]; ok && tool.Dimension != want {
			t.Errorf("%s: mount kind %d reads dimension %d, not %d", tool.Name, sb.Mount, want, tool.Dimension)
		}
		if (sb.Egress.To == GrantHosts) != (tool.Dimension == HostsDimension) {
			t.Errorf("%s: egress to the grant's hosts goes with the hosts dimension and only with it", tool.Name)
		}
		methodOK := sb.Egress.Method == ""
		if sb.Egress.Needed() {
			methodOK = sb.Egress.Method == "GET" || sb.Egress.Method == "POST"
		}
		if !methodOK {
			t.Errorf("%s: egress %+v: a method (GET or POST) exactly when there is a target", tool.Name, sb.Egress)
		}
	}
}

func TestDimensionKeys(t *testing.T) {
	for d, want := range map[Dimension]string{
		NoDimension: "", HostsDimension: "hosts", AbsolutePathsDimension: "paths",
		MemoryPathsDimension: "paths", PatternsDimension: "patterns",
	} {
		if got := d.Key(); got != want {
			t.Errorf("Dimension(%d).Key() = %q, want %q", d, got, want)
		}
	}
}

// schema is the part of a JSON schema the model relies on.
type schema struct {
	Type                 string                    `json:"type"`
	Properties           map[string]map[string]any `json:"properties"`
	Required             []string                  `json:"required"`
	AdditionalProperties *bool                     `json:"additionalProperties"`
}

func TestSchemasNameExactlyTheMembers(t *testing.T) {
	for _, tool := range Tools() {
		var s schema
		dec := json.NewDecoder(strings.NewReader(tool.Schema))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			t.Errorf("%s: schema is not valid JSON of the expected shape: %v", tool.Name, err)
			continue
		}
		members := jsonMembers(argsTypeOf(t, tool.Name))
		var props []string
		for name, p := range s.Properties {
			props = append(props, name)
			want := "string"
			if f, ok := argsTypeOf(t, tool.Name).FieldByName("Answer"); ok && f.Tag.Get("json") == name {
				want = "object" // inspect's answer type
			}
			if p["type"] != want || p["description"] == "" {
				t.Errorf("%s: property %s = %v, want a described string", tool.Name, name, p)
			}
		}
		slices.Sort(props)
		required := slices.Sorted(slices.Values(s.Required))
		if s.Type != "object" || !slices.Equal(props, members) || !slices.Equal(required, members) {
			t.Errorf("%s: schema type %q properties %v required %v, want object with %v", tool.Name, s.Type, props, required, members)
		}
		if s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: additionalProperties must be false", tool.Name)
		}
	}
}

func jsonMembers(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		names = append(names, t.Field(i).Tag.Get("json"))
	}
	slices.Sort(names)
	return names
}

func TestDecodeArgsGivesTheTypedValue(t *testing.T) {
	for _, tool := range Tools() {
		typ := argsTypeOf(t, tool.Name)
		if tool.InBroker {
			continue // inspect's members are not all strings: inspect_test.go
		}
		fields := map[string]string{}
		for _, m := range jsonMembers(typ) {
			fields[m] = "value of " + m
		}
		body, _ := json.Marshal(fields)
		args, err := tool.DecodeArgs(string(body))
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if reflect.TypeOf(args) != typ {
			t.Fatalf("%s: decoded %T, want %v", tool.Name, args, typ)
		}
		if args.ToolName() != tool.Name {
			t.Errorf("%s: decoded arguments say they are for %s", tool.Name, args.ToolName())
		}
		v := reflect.ValueOf(args)
		for i := range typ.NumField() {
			if got, want := v.Field(i).String(), fields[typ.Field(i).Tag.Get("json")]; got != want {
				t.Errorf("%s: %s = %q, want %q", tool.Name, typ.Field(i).Name, got, want)
			}
		}
	}
}

func TestSubjectIsTheConstrainedArgument(t *testing.T) {
	for _, row := range designTable {
		args, err := DecodeToolArgs(row.name, row.call)
		if err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		if args.Subject() != row.subject {
			t.Errorf("%s: Subject() = %q, want %q", row.name, args.Subject(), row.subject)
		}
	}
}

func TestDecodeArgsRejectsBadInput(t *testing.T) {
	cases := []struct {
		name, tool, arguments, want string
	}{
		{"empty", "http_fetch", ``, "JSON ends early"},
		{"cut short", "http_fetch", `{"url":`, "unexpected EOF"},
		{"missing member", "http_fetch", `{}`, `missing field "url"`},
		{"one of two missing", "notes_write", `{"path":"a"}`, `missing field "content"`},
		{"unknown member", "http_fetch", `{"url":"https://a.example/","proxy":"x"}`, `unknown field "proxy"`},
		{"member name is case-sensitive", "http_fetch", `{"URL":"https://a.example/"}`, `unknown field "URL"`},
		{"null member", "http_fetch", `{"url":null}`, "null at /url"},
		{"null top", "http_fetch", `null`, "null"},
		{"array", "http_fetch", `["https://a.example/"]`, "must be an object"},
		{"string", "http_fetch", `"https://a.example/"`, "must be an object"},
		{"number member", "shell", `{"command":1}`, "invalid value number at /command"},
		{"object member", "shell", `{"command":{}}`, "invalid value"},
		{"trailing object", "http_fetch", `{"url":"a"}{}`, "data after the value"},
		{"trailing garbage", "http_fetch", `{"url":"a"} x`, "invalid JSON"},
		{"duplicate member", "http_fetch", `{"url":"a","url":"b"}`, "duplicate"},
		{"invalid UTF-8", "http_fetch", "{\"url\":\"\xff\"}", "invalid UTF-8"},
		{"lone surrogate", "http_fetch", `{"url":"\ud800"}`, "surrogate"},
		{"byte order mark", "http_fetch", "\ufeff{\"url\":\"a\"}", "invalid character"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeToolArgs(c.tool, c.arguments)
			if err == nil {
				t.Fatalf("decoded %q", c.arguments)
			}
			if !strings.HasPrefix(err.Error(), c.tool+" arguments: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to name %s and say %q", err, c.tool, c.want)
			}
			if CodeOf(err) != BadMessage {
				t.Errorf("CodeOf = %q, want bad_message", CodeOf(err))
			}
		})
	}
}

func TestDecodeArgsRefusesForeignTools(t *testing.T) {
	if _, err := DecodeToolArgs("rm", `{}`); err == nil || !strings.Contains(err.Error(), `no tool named "rm"`) {
		t.Errorf("unknown tool: error %v", err)
	}
	if _, err := (Tool{Name: "shell"}).DecodeArgs(`{"command":"x"}`); err == nil {
		t.Error("a Tool built by hand decoded arguments")
	}
	if _, ok := ToolByName("Shell"); ok {
		t.Error("tool names are case-sensitive")
	}
}

func TestToolsReturnsACopy(t *testing.T) {
	Tools()[0].Name = "changed"
	if tool, _ := ToolByName("http_fetch"); tool.Name != "http_fetch" || ToolNames()[0] != "http_fetch" {
		t.Error("changing Tools() changed the catalog")
	}
}

// Every spelling of the same arguments encodes to one canonical text.
func TestEncodeArgsIsCanonical(t *testing.T) {
	for _, c := range []struct{ tool, in, want string }{
		{"shell", "{ \"command\" :\n\"ls\" }", `{"command":"ls"}`},
		{"shell", `{"command":"\u006cs\u001b"}`, `{"command":"ls\u001b"}`},
		{"notes_write", `{"content":"x","path":"a.md"}`, `{"path":"a.md","content":"x"}`},
		{"http_fetch", `{"url":"https://example.org/\u003c\u202e"}`, "{\"url\":\"https://example.org/<\u202e\"}"},
	} {
		args, err := DecodeToolArgs(c.tool, c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		got, err := EncodeArgs(args)
		if err != nil || string(got) != c.want {
			t.Errorf("%q: %s %v, want %s", c.in, got, err, c.want)
		}
	}
	if _, err := EncodeArgs(nil); err == nil {
		t.Error("EncodeArgs(nil) gave no error")
	}
}

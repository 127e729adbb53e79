package toolrun

import (
	"fmt"
	"strings"
	"testing"

	"boxmaker/fixtures/require"
)

func validJob() Job {
	return Job{
		Tool:      "notes_write",
		Arguments: `{"path":"a.md","content":"x"}`,
		Mounts:    []Mount{{Path: "/memory/notes", Writable: true}},
		Limits:    Limits{CPUSeconds: 1, MemoryBytes: 1 << 20, OutputBytes: 1 << 10, Processes: 8, FileBytes: 1 << 20},
	}
}

func TestJobRoundTrip(t *testing.T) {
	data, err := EncodeJob(validJob())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tool":"notes_write","arguments":"{\"path\":\"a.md\",\"content\":\"x\"}","mounts":[{"path":"/memory/notes","writable":true}],` +
		`"limits":{"cpu_seconds":1,"memory_bytes":1048576,"output_bytes":1024,"processes":8,"file_bytes":1048576},"egress":false,"consult":null,"system":null}`
	if string(data) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", data, want)
	}
	j, err := DecodeJob(data)
	if err != nil {
		t.Fatal(err)
	}
	if j.Tool != "notes_write" || len(j.Mounts) != 1 || !j.Mounts[0].Writable || j.Consult != nil {
		t.Fatalf("decoded %+v", j)
	}
}

func TestDecodeIsStrict(t *testing.T) {
	good := `{"ok":true,"content":"hi"}`
	if o, err := DecodeOutput([]byte(good)); err != nil || !o.OK || o.Content != "hi" {
		t.Fatalf("DecodeOutput(%s) = %+v, %v", good, o, err)
	}
	for _, bad := range []string{
		``,
		`garbage`,
		`{"ok":true}`,
		`{"ok":true,"content":"hi","class":"public"}`,
		`{"ok":true,"content":"hi"}{"ok":true,"content":"again"}`,
		`{"ok":null,"content":"hi"}`,
		`{"ok":true,"content":"hi","ok":false}`,
		"{\"ok\":true,\"content\":\"\xff\"}",
	} {
		if _, err := DecodeOutput([]byte(bad)); err == nil {
			t.Errorf("DecodeOutput(%q) accepted", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Job)
		want   string
	}{
		{"unknown tool", func(j *Job) { j.Tool = "rm" }, "no tool"},
		{"relative mount", func(j *Job) { j.Mounts[0].Path = "memory/notes" }, "clean absolute"},
		{"unclean mount", func(j *Job) { j.Mounts[0].Path = "/memory/../etc" }, "clean absolute"},
		{"root mount", func(j *Job) { j.Mounts[0].Path = "/" }, "clean absolute"},
		{"mount over proc", func(j *Job) { j.Mounts[0].Path = "/proc/1" }, "/proc"},
		{"mount over the executable", func(j *Job) { j.Mounts[0].Path = "/boxmaker" }, "/boxmaker"},
		{"mount in tmp", func(j *Job) { j.Mounts[0].Path = "/tmp/x" }, "/tmp"},
		{"duplicate mount", func(j *Job) { j.Mounts = append(j.Mounts, j.Mounts[0]) }, "twice"},
		{"zero limit", func(j *Job) { j.Limits.Processes = 0 }, "positive"},
		{"negative limit", func(j *Job) { j.Limits.CPUSeconds = -1 }, "positive"},
		{"egress without need", func(j *Job) { j.Egress = true }, "egress"},
		{"consult settings elsewhere", func(j *Job) { j.Consult = &Consult{URL: "https://x", Model: "m"} }, "consult"},
		{"fetch without egress", func(j *Job) { j.Tool = "http_fetch" }, "egress"},
		{"consult without settings", func(j *Job) { j.Tool, j.Egress = "consult", true }, "consult"},
		{"consult with a bad url", func(j *Job) {
			j.Tool, j.Egress, j.Consult = "consult", true, &Consult{URL: "file:///etc/passwd", Model: "m"}
		}, "not an http"},
		{"shell over usr", func(j *Job) {
			j.Tool, j.Mounts[0].Path, j.System = "shell", "/usr/share", &System{ShellPath: "/usr/bin:/bin"}
		}, "/usr"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := validJob()
			c.change(&j)
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want an error with %q", err, c.want)
			}
		})
	}
	j := validJob()
	j.Mounts[0].Path = "/usr/share/doc" // only shell needs /usr
	if err := j.Validate(); err != nil {
		t.Fatalf("file under /usr for a tool without /usr: %v", err)
	}
}

func TestLandlockABI(t *testing.T) {
	abi, err := LandlockABI()
	if err != nil {
		require.Available(t, "landlock", fmt.Errorf("toolkit would refuse to run: %w", err))
	}
	if abi < MinLandlockABI {
		t.Fatalf("LandlockABI() = %d without an error", abi)
	}
	t.Logf("landlock ABI %d", abi)
}

package toolkit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"boxmaker/roles"
	"boxmaker/roles/internal/toolrun"
)

// These cases all stop before confine, which would confine the test
// process itself; the runs that get further are in the e2e tests.
func TestCommandRefusesBeforeConfining(t *testing.T) {
	job, err := toolrun.EncodeJob(toolrun.Job{Tool: "notes_read", Arguments: `{"path":"a"}`, Mounts: []toolrun.Mount{}, Limits: toolrun.Limits{
		CPUSeconds: 1, MemoryBytes: 1 << 20, OutputBytes: 1 << 10, Processes: 8, FileBytes: 1 << 10,
	}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		stdin string
		usage bool
		want  string
	}{
		{"no tool", nil, "", true, "exactly one TOOL"},
		{"two tools", []string{"shell", "file_read"}, "", true, "exactly one TOOL"},
		{"unknown tool", []string{"rm"}, "", true, `no tool named "rm"`},
		{"not a job", []string{"shell"}, "hello", false, "job:"},
		{"a job with a label", []string{"notes_read"}, strings.Replace(string(job), `"consult":null`, `"consult":null,"class":"public"`, 1), false, "unknown field"},
		{"another tool's job", []string{"shell"}, string(job), false, "started for shell but the job is for notes_read"},
		{"a job too large", []string{"shell"}, strings.Repeat(" ", toolrun.MaxJobBytes+1), false, "over"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := Command()
			cmd.Reader = strings.NewReader(c.stdin)
			var out strings.Builder
			cmd.Writer, cmd.ErrWriter = &out, &out
			err := cmd.Run(context.Background(), append([]string{"toolkit"}, c.args...))
			var usage roles.UsageError
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &usage) != c.usage {
				t.Fatalf("toolkit %v = %v (usage error: %v), want %q", c.args, err, errors.As(err, &usage), c.want)
			}
			if out.Len() != 0 {
				t.Fatalf("toolkit wrote %q before refusing", out.String())
			}
		})
	}
}

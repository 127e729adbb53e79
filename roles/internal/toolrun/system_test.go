package toolrun

import (
	"strings"
	"testing"
)

func shellJob() Job {
	return Job{
		Tool:      "shell",
		Arguments: `{"command":"ls"}`,
		Mounts:    []Mount{{Path: "/work"}},
		Limits:    Limits{CPUSeconds: 1, MemoryBytes: 1 << 20, OutputBytes: 1 << 10, Processes: 8, FileBytes: 1 << 20},
		System:    &System{Paths: []string{"/nix/store"}, ShellPath: "/nix/store/abc-tools/bin:/usr/bin:/bin"},
	}
}

// Each bad system setting is refused with an error that names it, so that
// neither bwrap nor Landlock is ever handed one.
func TestValidateSystem(t *testing.T) {
	if err := shellJob().Validate(); err != nil {
		t.Fatalf("a NixOS shell job: %v", err)
	}
	cases := []struct {
		name   string
		change func(*Job)
		want   string
	}{
		{"shell without system settings", func(j *Job) { j.System = nil }, "system settings"},
		{"system settings on another tool", func(j *Job) { j.Tool, j.Arguments = "file_read", `{"path":"/work/a"}` }, "system settings"},
		{"relative system path", func(j *Job) { j.System.Paths = []string{"nix/store"} }, "clean absolute"},
		{"unclean system path", func(j *Job) { j.System.Paths = []string{"/nix/../etc"} }, "clean absolute"},
		{"the root", func(j *Job) { j.System.Paths = []string{"/"} }, "clean absolute"},
		{"twice", func(j *Job) { j.System.Paths = []string{"/nix/store", "/nix/store"} }, "twice"},
		{"over usr", func(j *Job) { j.System.Paths = []string{"/usr/local"} }, "/usr"},
		{"above usr", func(j *Job) { j.System.Paths = []string{"/usr"} }, "/usr"},
		{"over proc", func(j *Job) { j.System.Paths = []string{"/proc"} }, "/proc"},
		{"over tmp", func(j *Job) { j.System.Paths = []string{"/tmp/tools"} }, "/tmp"},
		{"over the executable", func(j *Job) { j.System.Paths = []string{"/boxmaker"} }, "/boxmaker"},
		{"a mount inside", func(j *Job) { j.Mounts[0].Path = "/nix/store/x" }, "overlaps system path"},
		{"a mount above", func(j *Job) { j.Mounts[0].Path = "/nix" }, "overlaps system path"},
		{"empty shell path", func(j *Job) { j.System.ShellPath = "" }, "empty"},
		{"relative shell path entry", func(j *Job) { j.System.ShellPath = "/bin:." }, "clean absolute"},
		{"empty shell path entry", func(j *Job) { j.System.ShellPath = "/bin::/usr/bin" }, "clean absolute"},
		{"control character", func(j *Job) { j.System.ShellPath = "/bin\n/usr/bin" }, "clean absolute"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := shellJob()
			c.change(&j)
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want an error with %q", err, c.want)
			}
			if _, err := EncodeJob(j); err == nil {
				t.Error("EncodeJob took it")
			}
		})
	}
}

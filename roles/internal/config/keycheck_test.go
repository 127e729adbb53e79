package config

import (
	"strings"
	"testing"
)

// TestConfigErrorsAllAtOnce: every mistake of the file in one error, each
// with its line, its key and the form expected; an unknown key names the
// nearest known one; no Go type or field name shows.
func TestConfigErrorsAllAtOnce(t *testing.T) {
	path := writeConfig(t, "[sandbox]\ncpu_seconds = \"ten\"\nmemry_mb = 5\n\n[broker]\napproval_timeout = 600\nresult_max_bytes = true\n"+
		"[egres]\ntimeout = \"1m\"\n[loop]\nrequest_timeout = \"soon\"\n")
	_, err := Load(path)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`line 2: sandbox.cpu_seconds: expected a whole number, not the string "ten"`,
		"line 3: unknown key sandbox.memry_mb (did you mean sandbox.memory_mb?)",
		`line 6: broker.approval_timeout: "600" is not a duration such as "30s" or "10m" (a string, with its unit)`,
		"line 7: broker.result_max_bytes: expected a whole number, not true",
		"line 8: unknown key egres (did you mean egress?)",
		`line 11: loop.request_timeout: "soon" is not a duration`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	for _, goName := range []string{"config.Sandbox", "CPUSeconds", "of type", "struct field"} {
		if strings.Contains(msg, goName) {
			t.Errorf("the error shows Go's name %q:\n%s", goName, msg)
		}
	}
	if !strings.HasPrefix(msg, path+": line 2: ") {
		t.Errorf("the errors are not in the order of their lines after the file's name:\n%s", msg)
	}
}

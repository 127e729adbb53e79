package upstream

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"boxmaker/roles/internal/config"
)

// A role's upstream: none configured is a clear error naming the file; a
// URL is taken as it is, with nothing said; the scripted model is a
// double that answers, and the role says so.
func TestFromConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := config.Config{}
	var diag strings.Builder
	if _, err := FromConfig(ctx, cfg, "/h/config.toml", "inferproxy", "the replies", 1, &diag); err == nil || !strings.Contains(err.Error(), "no upstream llama-server: set [infer] upstream") || !strings.Contains(err.Error(), "/h/config.toml") {
		t.Errorf("no upstream: %v", err)
	}
	cfg.Infer.Upstream = "http://127.0.0.1:8080"
	if up, err := FromConfig(ctx, cfg, "/h/config.toml", "inferproxy", "the replies", 1, &diag); err != nil || up != cfg.Infer.Upstream || diag.Len() != 0 {
		t.Errorf("a URL: %q %v, said %q", up, err, diag.String())
	}
	cfg.Infer.Upstream = config.ScriptedUpstream
	up, err := FromConfig(ctx, cfg, "/h/config.toml", "inspectd", "the answers", 2, &diag)
	if err != nil || !strings.HasPrefix(up, "http://127.0.0.1:") {
		t.Fatalf("scripted: %q %v", up, err)
	}
	if want := "inspectd: SCRIPTED MODEL: the answers come from a script (roles/internal/llamadouble), not from a language model\n"; diag.String() != want {
		t.Errorf("scripted said %q, want %q", diag.String(), want)
	}
	resp, err := http.Get(up + "/props")
	if err != nil {
		t.Fatalf("the double does not answer: %v", err)
	}
	resp.Body.Close()
}

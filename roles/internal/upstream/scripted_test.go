package upstream

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"boxmaker/roles/internal/config"
)

// The scripted model answers with the script up gave in the environment,
// and a bad one is an error, which stops the role before it serves.
func TestScriptedModelServesTheGivenScript(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv(config.ModelScriptEnv, "[[rule]]\ncontent = \"from the given script\"\n")
	url, err := ServeScripted(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "from the given script") {
		t.Errorf("the reply: %s", body)
	}
	t.Setenv(config.ModelScriptEnv, "[[rule]]\nanswer = 1\n")
	if _, err := ServeScripted(ctx, 1); err == nil || !strings.Contains(err.Error(), config.ModelScriptEnv) {
		t.Errorf("a bad script: %v", err)
	}
}

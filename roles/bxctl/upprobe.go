package bxctl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"boxmaker/roles/internal/config"
)

// probeTimeout bounds the model server's answer to up's probe: a server
// on the network answers /health in milliseconds; one that takes seconds
// is as good as down for a chat.
const probeTimeout = 5 * time.Second

// probeModel asks the model server for /health once, as up starts, so that
// a dead or wrong server is named at once rather than at the first turn.
// up starts anyway: the server may come up later.
func probeModel(ctx context.Context, log io.Writer, paths config.Paths, upstream string) {
	if err := modelAnswers(ctx, upstream); err != nil {
		fmt.Fprintf(log, "up: the model server at %s does not answer (%v): boxmaker runs, but every chat fails until it does; start llama-server there, or set [infer] upstream in %s\n",
			upstream, err, paths.Config)
		return
	}
	fmt.Fprintf(log, "up: the model server at %s answers\n", upstream)
}

// modelAnswers reports why the llama-server at upstream does not answer
// GET /health with 200, or nil.
func modelAnswers(ctx context.Context, upstream string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(upstream, "/")+"/health", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health answered %s", res.Status)
	}
	return nil
}

// modelHint is what to do about a turn that failed because the model
// server did not answer; "" for any other failure.
func modelHint(paths config.Paths, err error) string {
	if err == nil || !strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), "llama-server") {
		return ""
	}
	return fmt.Sprintf("the model server is not answering: start llama-server at the address above, or set [infer] upstream in %s and restart boxmaker up; to try boxmaker without a model, use boxmaker up --scripted-model", paths.Config)
}

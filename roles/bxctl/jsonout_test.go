package bxctl

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGrantsJSON: grants check and grants explain print one JSON object
// each, with the exit statuses of their tables.
func TestGrantsJSON(t *testing.T) {
	code, out, errOut := run(t, "grants", "check", "--json", fixtures+"/grants/valid")
	var check struct {
		Errors []string `json:"errors"`
		Grants []struct {
			ID          string              `json:"id"`
			Tool        string              `json:"tool"`
			Mode        string              `json:"mode"`
			Constraints map[string][]string `json:"constraints"`
		} `json:"grants"`
	}
	if err := json.Unmarshal([]byte(out), &check); err != nil || code != 0 || len(check.Grants) == 0 || len(check.Errors) != 0 {
		t.Fatalf("grants check --json: status %d, %v\n%s%s", code, err, out, errOut)
	}
	found := false
	for _, g := range check.Grants {
		if g.ID == "fetch-docs" && g.Tool == "http_fetch" && g.Mode == "auto" && len(g.Constraints["hosts"]) > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no fetch-docs grant in %s", out)
	}
	code, out, _ = run(t, "grants", "check", "--json", fixtures+"/grants/invalid")
	if err := json.Unmarshal([]byte(out), &check); err != nil || code != 1 || len(check.Errors) == 0 {
		t.Errorf("invalid grants --json: status %d, %v\n%s", code, err, out)
	}
	code, out, _ = run(t, "grants", "explain", "--json", "--grants", fixtures+"/grants/valid", "--at", "2026-09-17T08:05:00.000Z",
		"file_read", `{"path":"/nowhere"}`)
	var ex struct {
		Decision string   `json:"decision"`
		Reason   string   `json:"reason"`
		Grant    *string  `json:"grant"`
		Steps    []string `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil || code != 1 || ex.Decision != "denied" || ex.Reason != "no_grant" || ex.Grant != nil || len(ex.Steps) == 0 {
		t.Errorf("explain --json: status %d, %v\n%s", code, err, out)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("explain --json printed more than one line:\n%s", out)
	}
}

// TestStatusJSONWhenNotUp: a home boxmaker up does not run is up:false,
// every role not started, and no model.
func TestStatusJSONWhenNotUp(t *testing.T) {
	code, out, errOut := run(t, "status", "--json", "--home", t.TempDir())
	var st struct {
		Up    bool `json:"up"`
		Roles []struct {
			State string `json:"state"`
		} `json:"roles"`
		Model *struct{} `json:"model"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 1 || st.Up || st.Model != nil || len(st.Roles) == 0 || st.Roles[0].State != "not started" {
		t.Errorf("status --json: %d %v\n%s%s", code, err, out, errOut)
	}
}

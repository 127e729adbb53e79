package mcpclient

import (
	"encoding/json"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// definitionMembers are the members of a listed tool that its pin covers
// (DESIGN.md section 16, Details): any change to any of them is a change.
var definitionMembers = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// Definition is t's definition in canonical JSON (RFC 8785: members sorted,
// numbers and strings in one form), so that the same tool always gives the
// same bytes and the same SHA-256.
func Definition(t *mcp.Tool) (string, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("tool %q: %w", t.Name, err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return "", fmt.Errorf("tool %q: %w", t.Name, err)
	}
	kept := map[string]json.RawMessage{}
	for _, k := range definitionMembers {
		if v, ok := all[k]; ok {
			kept[k] = v
		}
	}
	return Canonical(kept)
}

// Canonical encodes v as canonical JSON (RFC 8785).
func Canonical(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	val := jsontext.Value(raw)
	if err := val.Canonicalize(); err != nil {
		return "", err
	}
	return string(val), nil
}

package toolkit

import (
	"encoding/json"
	"testing"

	"boxmaker/wire"
)

// Every catalog tool has code in toolkit that takes the arguments the
// catalog decodes, and toolkit has code for no tool the catalog lacks: a
// tool half added fails here, not in a sandbox at run time.
func TestEveryToolIsImplemented(t *testing.T) {
	for _, tool := range wire.Tools() {
		impl, ok := implementations[tool.Name]
		if tool.InBroker {
			// brokerd answers it and never starts a sandbox for it, so
			// code here could only ever run by mistake.
			if ok {
				t.Errorf("%s is answered by brokerd (InBroker), but toolkit has code for it", tool.Name)
			}
			continue
		}
		if !ok {
			t.Errorf("%s is in the catalog but toolkit has no code for it", tool.Name)
			continue
		}
		args, err := tool.DecodeArgs(sampleArguments(t, tool))
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if !impl.takes(args) {
			t.Errorf("%s: toolkit's code takes other arguments than the catalog's %T", tool.Name, args)
		}
	}
	for name := range implementations {
		if _, ok := wire.ToolByName(name); !ok {
			t.Errorf("toolkit has code for %s, which the catalog lacks", name)
		}
	}
}

// sampleArguments is an arguments object with every member the tool's
// schema requires.
func sampleArguments(t *testing.T, tool wire.Tool) string {
	t.Helper()
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal([]byte(tool.Schema), &schema); err != nil {
		t.Fatalf("%s: schema: %v", tool.Name, err)
	}
	args := map[string]string{}
	for _, member := range schema.Required {
		args[member] = "x"
	}
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

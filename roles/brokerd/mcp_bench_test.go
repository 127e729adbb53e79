package brokerd

import (
	"testing"

	"boxmaker/wire"
)

// BenchmarkMCPCallThroughBrokerd is a warm MCP call as loopd makes it: a
// connection to brokerd, the decision over grants and pins, the audit
// record, the call in the session's instance (sandbox, toolkit mcp, the
// hostile Go server) and the labelled result. Compare with
// mcppool's BenchmarkMCPWarmCallDirectSDK/hostile-go.
func BenchmarkMCPCallThroughBrokerd(b *testing.B) {
	h := newMCPHome(b, map[string]string{"bad-any": mcpAnyGrant})
	h.pin()
	if _, ok := h.toolCall("s1", "mcp__bad__echo", `{"text":"warm"}`).(wire.Result); !ok {
		b.Fatal("the warm-up call did not run")
	}
	b.ResetTimer()
	for range b.N {
		if _, ok := h.toolCall("s1", "mcp__bad__echo", `{"text":"hi"}`).(wire.Result); !ok {
			b.Fatal("a call did not run")
		}
	}
}

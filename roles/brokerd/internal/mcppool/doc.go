// Package mcppool keeps brokerd's MCP instances (DESIGN.md section 16):
// one sandbox running `boxmaker toolkit mcp` per session and server,
// started at the session's first call of that server, reused by its later
// calls, ended when idle, when the session closes, or when it hangs or
// dies (the next call starts another), and bounded in number.
//
// It speaks to an instance only in the frames of wire/mcp.go. It must never
// parse JSON-RPC or anything else a server chose beyond those frames, never
// let one instance serve two sessions, and never send a call before the
// caller has checked the tool against this instance's live list.
package mcppool

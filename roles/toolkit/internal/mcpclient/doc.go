// Package mcpclient is the MCP client of `boxmaker toolkit mcp` (DESIGN.md
// section 16): inside the sandbox, beside the server it starts as its
// child (or, for a remote server, with only its channel to egressd: every
// HTTP connection a socketpair sent on it, remote.go), it speaks JSON-RPC
// to the server with the official Go SDK and
// answers brokerd in the strict, bounded frames of wire/mcp.go: the tool
// list as canonical definitions, and each call's result as text.
//
// Everything the server sends is hostile. This package must never pass a
// server's JSON-RPC on to brokerd, never answer a server's request for
// sampling, elicitation or roots, never let one reply or notification grow
// without bound, and never let a control character of the server's reach a
// log line.
package mcpclient

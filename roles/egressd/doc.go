// Package egressd is the one role that reaches the web for tools. brokerd
// hands it, over egress.sock, one end of a socketpair per http_fetch or
// consult call together with that call's hosts entries and, for consult,
// the Authorization value; egressd answers egress_ready and then serves
// exactly one HTTP request that the sandbox writes on that descriptor in
// absolute form. It checks the URL against the hosts entries with policy's
// matcher, resolves the name once, refuses special-purpose addresses unless
// the entries list that IP literal, connects to the address it checked
// (re-checked in the dialer's Control), does the TLS itself with the name
// the URL gave, re-checks every redirect hop, caps bytes, redirects and
// time, and writes the response back.
//
// For a remote MCP server (DESIGN.md section 16, mcpopen.go) brokerd sends
// egress_mcp_open instead, with the instance's channel: the sandbox sends on
// it one end of a fresh socketpair per HTTP connection, and egressd serves
// one request after another on each (keep-alive, each response chunked),
// to the url's one origin and path only, with POST, GET or DELETE,
// streamable HTTP's headers alone passed either way, the Authorization
// value added, no redirect followed, the response streamed back as it
// comes, cleaned of the secret and cut at max_bytes, and the channel's log
// lines rate limited. Beside each such connection it keeps one upstream
// connection of its own, dialed through the guard, which it writes and
// reads itself (mcpupstream.go); every connection ends with the channel.
//
// egressd must never use a proxy from the environment, resolve a name twice
// for one connection, connect to an address it has not checked, let a
// sandbox's Authorization, Cookie or Proxy-* header through, write the
// secret back to the sandbox or into a log, reuse a connection across calls
// (or, for MCP, across channels), follow a redirect for an MCP server, pass
// an MCP exchange a header streamable HTTP does not name (mcpheader.go),
// accept a frame other than egress_open and egress_mcp_open, or import
// another role's package.
package egressd

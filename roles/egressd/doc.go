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
// Keep-alive must not let one exchange's bytes become another's: each
// request on a sandbox connection is parsed and held to the grant on its
// own and re-framed for the server (egressd's own Content-Length, never
// the sandbox's framing); a request written before the last one was
// answered (pipelining) is refused and ends the connection, and so does,
// after its answer, a chunked request (its Content-Length may have been
// dropped) or any failure. An upstream connection is kept only after a
// response read whole, with nothing after it: bytes past a response's end
// (a 204 with a body, a body longer than its length, a second response)
// drop it, and it is looked at again before reuse, so that the sandbox
// never reads what the server sent unasked as the answer to a request.
//
// egressd must never use a proxy from the environment, resolve a name twice
// for one connection, connect to an address it has not checked, let a
// sandbox's Authorization, Cookie or Proxy-* header through, write the
// secret back to the sandbox or into a log, reuse a connection across calls
// (or, for MCP, across sandbox connections or channels), keep an MCP
// upstream connection after a response it could not frame cleanly, follow
// a redirect for an MCP server, pass an MCP exchange a header streamable
// HTTP does not name (mcpheader.go), accept a frame other than egress_open
// and egress_mcp_open, or import another role's package.
package egressd

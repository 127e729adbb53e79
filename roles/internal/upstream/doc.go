// Package upstream is what the two roles that reach the llama-server
// share: the check of its configured URL, the HTTP transport to it, and
// the scripted model served in place of one. inferproxy carries loopd's
// requests and inspectd brokerd's quarantined questions, each in its own
// process under its own uid (issue 23), and neither imports the other.
//
// upstream must never read the environment for a proxy, decompress or
// retry anything, or keep state between calls beyond the transport's idle
// connections.
package upstream

// Package loopd is the agent loop: it takes the owner's messages from
// loop.sock (bxctl chat and gatewayd), talks to the model through infer.sock
// with one llama-server slot per session, sends every tool call the model
// asks for to brokerd, gives the model brokerd's answers as tool results,
// and keeps each session in an append-only log (sessions/<id>/<epoch>.jsonl)
// that it replays byte for byte so that the server's prompt cache holds.
// Every text it sends has the model's turn markers cut (markers.go), since
// the server reads them as special tokens wherever they stand, and the
// summary that starts an epoch is a fenced message of its own, never part
// of the system message.
//
// loopd must never approve anything (approvals go from the owner to brokerd,
// never through loopd), never label a result (brokerd labels from the grant;
// loopd only copies the label into its log), never hold a secret, never reach
// the network except infer.sock and broker.sock, and never import another
// role's package. Its verify-device command (verifydevice.go) is no part of
// the daemon: a person runs it to check a llama-server, and it alone dials
// the URL it is given.
package loopd

// Package inferproxy is the inferproxy role: the process that carries
// loopd's requests to the llama-server upstream. It listens with plain HTTP
// on run/loopd-inferproxy/infer.sock, accepts connections only from loopd's
// uid (SO_PEERCRED, beside the directory's permissions, checked at accept by
// the shared gate), and forwards the endpoints loopd uses, its pair's accept
// list in the role table (POST /v1/chat/completions, GET /health, GET
// /props, POST /tokenize), to the configured upstream, and the answers
// back, byte for byte and chunk by chunk as they arrive. GET /slots is not
// among them: newer llama-server builds list each slot's prompt there.
//
// brokerd's quarantined inspect requests, which hold a handle's content,
// are inspectd's, a role under its own uid (issue 23): inferproxy carries
// nothing of them, and keeps loopd off their slot. A chat request that
// names the inspect slot ([inspect] slot), a slot id llama-server would
// wrap onto it, a slot in any other form than a plain number, or more than
// one completion, is refused before it reaches the upstream (slot.go).
//
// inferproxy must never forward another endpoint or method, a chat request
// on the inspect slot, add or rewrite a header beyond the hop-by-hop ones
// HTTP requires it to drop, change a body, buffer a whole response,
// decompress or retry anything, use a proxy from the environment, connect
// anywhere but the upstream, accept a request body over its cap, or import
// another role's package. It keeps serving when the upstream is down,
// answering 502 until it is back.
package inferproxy

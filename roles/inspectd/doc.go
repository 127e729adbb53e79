// Package inspectd is the inspectd role: the process that asks brokerd's
// quarantined inspect questions of the llama-server (DESIGN.md section 15).
// Each request holds a handle's content, so it never shares a process, a
// uid or a slot with loopd's requests (issue 23): inspectd runs under its
// own uid, listens only on run/brokerd-inspectd/inspect.sock for brokerd's
// uid (SO_PEERCRED, checked at accept by the shared gate, and the frames
// its pair accepts in the role table), and asks on the inspect slot, which
// inferproxy refuses to loopd. Each request starts with a fresh random
// nonce, so that no prompt cache entry it leaves shares more than the chat
// template's first tokens with anything another client can send.
//
// inspectd must never return more than the model's answer text, cut short
// (never a timing, a slot, or the upstream's error body, which may quote the
// prompt), serve loopd or any client but brokerd, offer the model tools,
// connect anywhere but the upstream, or import another role's package.
package inspectd

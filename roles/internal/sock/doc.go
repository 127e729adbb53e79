// Package sock is how roles listen and dial: Unix stream sockets in per-pair
// directories, and the one gate every listener passes. The gate checks the
// peer's uid with SO_PEERCRED on every connection and bounds the
// connections; for wire frames it reads them (with their descriptors where
// the pair passes one), refuses any kind its pair does not accept, answers
// every bad frame with an error before it closes, and cancels a handler's
// context when its peer hangs up. Who may connect and what they may send
// come from the pair's row of the role table (ListenPair, ServerFor,
// ListenerFor), never from the listener.
//
// sock must never decide anything about tools or approvals; it only moves
// frames and says who sent them.
package sock

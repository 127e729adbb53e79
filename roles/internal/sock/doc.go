// Package sock is how roles listen and dial: Unix stream sockets in per-pair
// directories, the peer's uid checked with SO_PEERCRED on every connection,
// and a serve loop that reads frames, refuses any kind its socket does not
// accept, and answers every bad frame with an error before it closes.
//
// sock must never decide anything about tools or approvals; it only moves
// frames and says who sent them.
package sock

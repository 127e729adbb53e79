// Package fdpass moves one wire frame together with open descriptors over a
// Unix stream socket (SCM_RIGHTS on the same sendmsg as the frame's first
// byte), and holds brokerd's side of egress.sock: OpenEgress makes the
// socketpair for one call, hands one end to egressd and returns the other
// for the sandbox.
//
// fdpass must never leak a descriptor: every descriptor that arrives is
// either returned to the caller or closed, including those that came with a
// frame that failed to read or decode. It must never read past the end of
// the frame it was asked for, so that a later frame's descriptors are never
// taken for this one's, and it decides nothing about what a frame asks.
package fdpass

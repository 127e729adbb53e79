// Package handles is brokerd's store of handles (DESIGN.md section 15):
// the results of grants with result = "handle", kept per session in
// broker/handles/<session>/h<N> with their labels, outside the
// conversation; the handles a call refers to, loaded for policy.Decide;
// and the questions inspect may still ask of each content, with the
// declassified bits a session has taken, counted durably before a
// question is asked.
//
// handles must never give one session's handle to another (a session
// names only its own), never hand out a handle's content but to brokerd
// (the call path substitutes it, the owner's handle_show shows it), never
// let a crash leave a question uncounted, never decide a call, and never
// import brokerd or another role.
package handles

// Package sessions is brokerd's store of each session's state (DESIGN.md
// section 12): the taint and untrusted flag a session has taken on from
// the results brokerd returned to it, kept in memory and in one file per
// session under broker/sessions/, so that a restart keeps them.
//
// sessions must never let what is in memory stand above what is on disk
// (a change is durable before it is kept, and before the result that made
// it is sent), never lower a session's state (a stored file that does not
// parse is an error, never a fresh session), never take a session's state
// from loopd's word, never decide a call, and never import brokerd or
// another role.
package sessions

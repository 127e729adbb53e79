// Package notes is brokerd's memory of who wrote what under memory/
// (DESIGN.md section 12): the label of every note a tool call created or
// changed (the class and trust the writing session had, with its session
// and call), kept in broker/notes/, found after each call by a walk of what
// its sandbox had mounted writable, and read back as the label a call
// that could read the note takes on. It also answers the owner's note
// commands: the list, one note, its label, and an endorsement that lowers
// one.
//
// brokerd's call path uses it as Begin before a sandbox runs and Finish
// after (Writer says who writes and how high); nothing else of brokerd
// reaches inside.
//
// notes must never follow a symlink or leave memory/ when it reads or
// walks (every open goes beneath memory/ through nofollow), never let a
// label fall except by the owner's Endorse (after the endorsement is
// audited), never answer a call before its labels are durable, never
// decide a call, and never import brokerd or another role.
package notes

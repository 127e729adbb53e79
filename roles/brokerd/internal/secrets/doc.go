// Package secrets reads brokerd's copies of the owner's secrets, the ones
// grants name with secret = "name" (DESIGN.md section 11): systemd's
// credentials, then up's copies, then, in a development home only,
// secrets/ itself.
//
// secrets must never follow a link or read anything but a regular file of
// a plain name, never look past a copy directory for a secret it lacks,
// never put a secret's value in an error or a log, never decide a call,
// and never import brokerd or another role.
package secrets

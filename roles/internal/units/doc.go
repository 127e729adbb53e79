// Package units derives a systemd installation from the role table: the
// role users and the per-pair groups, the directories of the runtime layout
// with their owners and modes, the role symlinks, and one hardened unit per
// daemon plus boxmaker.target. `boxmaker install --systemd` carries out its
// Plan; nix/units.json, which the NixOS module reads, is its NixData, so the
// two installations cannot drift apart (the package's tests evaluate
// nix/units.nix and compare).
//
// units must never touch the system: no file, user or process is created,
// read or changed here, and the environment is not read. It turns data into
// data and text; bxctl's install command does the work.
package units

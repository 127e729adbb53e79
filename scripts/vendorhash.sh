#!/bin/sh
# vendorhash.sh: recompute nix/package.nix's vendorHash with Nix's own
# hashing, offline. buildGoModule's goModules derivation runs `go mod vendor`
# and hashes the directory as a NAR (outputHashMode "recursive", sha256), so
# this does the same from the module cache and writes the SRI hash in.
# roles/internal/units' TestNixVendorHash checks it on every make test.
set -eu
go=${GO:-go}
nix=$(command -v nix) || { echo "vendor-hash: needs nix (Debian: apt-get install nix-bin)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOFLAGS= GOWORK=off GOTOOLCHAIN=local $go mod vendor -o "$tmp/vendor"
hash=$("$nix" --extra-experimental-features nix-command hash path --type sha256 "$tmp/vendor")
case $hash in
sha256-*) ;;
*) echo "vendor-hash: nix hash path gave '$hash', not an SRI sha256" >&2; exit 1 ;;
esac
sed -i "s|^\( *vendorHash = \).*;|\1\"$hash\";|" nix/package.nix
grep -q "vendorHash = \"$hash\";" nix/package.nix || { echo "vendor-hash: nix/package.nix has no vendorHash line to set" >&2; exit 1; }
echo "vendor-hash: nix/package.nix vendorHash = $hash"

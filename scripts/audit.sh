#!/bin/sh
# audit.sh [DB]: govulncheck, pinned by go.mod's tool directive, against the
# module's code and every dependency it builds with. It needs the Go
# vulnerability database (DB, default https://vuln.go.dev; a file:// URL of
# a copy works offline), so it is development-time egress and no part of the
# offline gate (make test). Exit status: 0 no known vulnerability reached,
# 3 govulncheck found some, 1 it could not run (the message says why).
set -u
db=${1:-https://vuln.go.dev}
go=${GO:-go}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "audit: govulncheck $($go list -m -f '{{.Version}}' golang.org/x/vuln) against $db" >&2
$go tool govulncheck -db "$db" ./... >"$out" 2>&1
rc=$?
cat "$out"
case $rc in
0) echo "audit: no known vulnerability reaches this module's code" >&2 ;;
3) echo "audit: govulncheck found vulnerabilities (above); update the modules it names" >&2 ;;
*)
	if grep -q "fetching vulnerabilities" "$out"; then
		echo "audit: cannot reach the vulnerability database at $db (offline?). make audit needs it;" >&2
		echo "audit: it is development-time egress and no part of make test. Run it where $db is" >&2
		echo "audit: reachable, or give a copy: make audit VULNDB=file:///path/to/vulndb" >&2
	else
		echo "audit: govulncheck failed (exit status $rc)" >&2
	fi
	rc=1
	;;
esac
exit $rc

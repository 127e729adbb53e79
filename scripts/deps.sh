#!/bin/sh
# deps.sh PACKAGE...: make sure this machine has what boxmaker needs, by
# Debian/Ubuntu package name. What is missing is installed with apt-get when
# run as root (saying so); otherwise deps.sh stops at once and prints the one
# command that installs it. make run, make test and .ci/run all call it, so
# the list of what each needs lives in the Makefile and .ci/run alone.
set -eu

# present PACKAGE: whether what boxmaker uses from PACKAGE is here. A
# package is known by the command (or file) boxmaker uses from it, so that
# the check also works where dpkg is not the package manager.
present() {
	case $1 in
	bubblewrap) command -v bwrap >/dev/null 2>&1 ;;
	nix-bin) command -v nix-instantiate >/dev/null 2>&1 ;;
	systemd) command -v systemd-analyze >/dev/null 2>&1 ;;
	bsdutils) command -v script >/dev/null 2>&1 ;;
	ca-certificates) test -e /etc/ssl/certs/ca-certificates.crt ;;
	python3-venv) python3 -c 'import ensurepip, venv' >/dev/null 2>&1 ;;
	g++) command -v c++ >/dev/null 2>&1 ;;
	*) command -v "$1" >/dev/null 2>&1 ;;
	esac
}

missing=""
for pkg in "$@"; do
	present "$pkg" || missing="$missing $pkg"
done
missing=${missing# }
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing $missing with apt-get" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends $missing >&2
	still=""
	for pkg in $missing; do
		present "$pkg" || still="$still $pkg"
	done
	[ -z "$still" ] && exit 0
	echo "deps: apt-get installed$still, but it is still not usable here" >&2
	exit 1
fi

if command -v apt-get >/dev/null 2>&1; then
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo "
	echo "boxmaker needs $missing, which is not installed. Install it with:" >&2
	echo "  ${sudo}apt-get install -y $missing" >&2
else
	echo "boxmaker needs $missing (Debian/Ubuntu package names), which is not installed; install it with your package manager." >&2
fi
exit 1

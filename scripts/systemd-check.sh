#!/usr/bin/env bash
# make systemd-check: boot a Debian 12 container under a live systemd, install
# the built binary in it with `boxmaker install --systemd`, and check it as the
# owner would. Each check prints PASS, FAIL or CANNOT(reason). It exits 1 when
# a check FAILs (boxmaker is wrong); when this machine cannot make or boot the
# container (no mirror, no nspawn) the checks say CANNOT and it exits 0.
# Usage: scripts/systemd-check.sh BINARY. Needs root. Environment:
#   BOXMAKER_CHECK_CACHE   where the root file system is kept (reused when present)
#   BOXMAKER_CHECK_MIRROR  the Debian mirror (default: the one apt uses here)
#   BOXMAKER_CHECK_SSH_PORT  sshd's port for the deploy check (default: a free one from 22022)
set -uo pipefail

bin=$(realpath "${1:-bin/boxmaker}")
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${BOXMAKER_CHECK_CACHE:-/var/cache/boxmaker-systemd-check}
suite=bookworm
packages=systemd,systemd-sysv,dbus,bubblewrap,openssh-server,sudo
rootfs=$cache/rootfs-$suite
started=$(date +%s)
passed=0 failed=0 cannot=0

say() { printf '%-28s %s\n' "$1" "$2"; }
pass() { say "$1" PASS; passed=$((passed + 1)); }
fail() { say "$1" "FAIL: $2"; failed=$((failed + 1)); }
cannot() { say "$1" "CANNOT($2)"; cannot=$((cannot + 1)); }
elapsed() { echo "$(($(date +%s) - started))s"; }

# Every check, in order: what CANNOT reports for each when the container
# never comes up.
checks=(install units-start own-users status sandboxed-tool-call approval kill-9-restart
	audit-verify ip-address-filter systemctl-stop deploy-over-ssh deploy-to-nixos)

finish() {
	echo "systemd-check: $passed PASS, $failed FAIL, $cannot CANNOT in $(elapsed)"
	exit $((failed > 0))
}

# cannot_all ends the run when the container cannot be had: every check
# that has not run says why.
cannot_all() {
	for c in "${checks[@]}"; do cannot "$c" "$1"; done
	finish
}

[ "$(id -u)" = 0 ] || cannot_all "not root: debootstrap and systemd-nspawn need root"
[ -x "$bin" ] || { echo "systemd-check: $bin is not built (make build)" >&2; exit 1; }

# ---- the tools and the root file system ------------------------------------

# The commands this needs on the machine, by the Debian package that has it.
missing=
for need in debootstrap:debootstrap systemd-nspawn:systemd-container nsenter:util-linux pgrep:procps \
	ss:iproute2 ssh:openssh-client scp:openssh-client ssh-keygen:openssh-client; do
	command -v "${need%%:*}" >/dev/null || missing="$missing ${need#*:}"
done
if [ -n "$missing" ]; then
	echo "systemd-check: installing$missing with apt-get"
	# shellcheck disable=SC2086 # a list of packages
	mkdir -p "$cache" && { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing; } >"$cache/apt.log" 2>&1 ||
		cannot_all "apt-get could not install$missing: $(tail -n 1 "$cache/apt.log")"
fi

# mirror is the Debian archive apt uses here: the first URI (deb822
# .sources) or deb line (.list) that is not the security archive.
mirror() {
	[ -n "${BOXMAKER_CHECK_MIRROR:-}" ] && { echo "$BOXMAKER_CHECK_MIRROR"; return; }
	local uris
	uris=$(
		awk '$1 == "URIs:" { for (i = 2; i <= NF; i++) print $i }' /etc/apt/sources.list.d/*.sources 2>/dev/null
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }' \
			/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
		true
	)
	uris=$(echo "$uris" | grep -i debian | grep -v security | head -n 1)
	[ -n "$uris" ] && echo "$uris"
}

if [ "$(cat "$rootfs/.boxmaker-packages" 2>/dev/null)" != "$packages" ]; then
	url=$(mirror) || cannot_all "no Debian mirror in /etc/apt/sources.list*; set BOXMAKER_CHECK_MIRROR"
	echo "systemd-check: debootstrap $suite from $url into $rootfs (cached for later runs)"
	t0=$(date +%s)
	mkdir -p "$cache" && rm -rf "$rootfs.tmp"
	if ! debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs.tmp" "$url" >"$cache/debootstrap.log" 2>&1; then
		cannot_all "debootstrap from $url failed (no mirror reachable?): $(tail -n 1 "$cache/debootstrap.log")"
	fi
	# sshd runs only for the deploy check, on a port the check chooses.
	systemctl --root="$rootfs.tmp" disable ssh.service >/dev/null 2>&1
	echo "$packages" >"$rootfs.tmp/.boxmaker-packages"
	rm -rf "$rootfs" && mv "$rootfs.tmp" "$rootfs"
	echo "systemd-check: debootstrap took $(($(date +%s) - t0))s"
fi

# ---- boot ------------------------------------------------------------------

work=$(mktemp -d /tmp/systemd-check.XXXXXX)
cp "$bin" "$work/boxmaker"
cp -r "$repo/scripts/systemd-check" "$work/inside"
nspawn_pid=
cleanup() {
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		kill "$nspawn_pid" # nspawn halts the container's systemd, then removes the ephemeral copy
		for _ in $(seq 1 60); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.5; done
		if kill -9 "$nspawn_pid" 2>/dev/null; then
			# nspawn had no time to remove its throwaway copy: the log names it.
			copy=$(sed -n 's/^Spawning container .* on \(.*\)\.$/\1/p' "$work/nspawn.log")
			case $copy in "$cache"/.#machine.*) rm -rf "$copy" "$cache/.#${copy#"$cache"/}.lck" ;; esac
		fi
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# PID 1 here need not be systemd, hence --keep-unit and --register=no; the
# landlock calls are missing from nspawn 252's own filter, and brokerd will
# not start without Landlock. -x boots a throwaway copy of the cached tree.
SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 systemd-nspawn --register=no --keep-unit --console=passive -x \
	--system-call-filter='landlock_create_ruleset landlock_add_rule landlock_restrict_self' \
	--bind-ro="$work:/mnt/check" -D "$rootfs" -b >"$work/nspawn.log" 2>&1 &
nspawn_pid=$!
disown # its end is cleanup's business, not a job report

# leader is the container's PID 1 as this machine sees it: the descendant of
# nspawn whose own pid namespace calls it 1, once it is systemd (before the
# exec it is nspawn still, setting up the container's mounts).
leader=
for _ in $(seq 1 450); do # -x copies the tree first: up to 90 s on a busy disk
	for p in $(pgrep -P "$nspawn_pid"; for c in $(pgrep -P "$nspawn_pid"); do pgrep -P "$c"; done); do
		if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ] &&
			awk '$1 == "NSpid:" && $NF == 1 { found = 1 } END { exit !found }' "/proc/$p/status" 2>/dev/null; then
			leader=$p
		fi
	done
	[ -n "$leader" ] && break
	kill -0 "$nspawn_pid" 2>/dev/null || break
	sleep 0.2
done
[ -n "$leader" ] || cannot_all "systemd-nspawn could not boot the container: $(grep -v '^$' "$work/nspawn.log" | tail -n 1)"
C() { nsenter -t "$leader" -a "$@"; }
# is-system-running --wait fails at once while systemd's socket is not there
# yet, so it is asked again until it answers.
for _ in $(seq 1 90); do
	state=$(C timeout 90 systemctl is-system-running --wait 2>&1)
	case $state in *"Failed to connect"* | offline) sleep 1 ;; *) break ;; esac
done
case $state in
running | degraded) echo "systemd-check: the container's systemd is $state after $(elapsed)" ;;
*) cannot_all "the container's systemd did not come up: $state" ;;
esac

# ---- the checks, run inside as root (the owner under systemd) ---------------

# inside runs one check's script in the container; its status decides PASS
# or FAIL. Its output is shown indented (the last 20 lines on FAIL).
inside() {
	local name=$1 out
	shift
	out=$(C "$@" 2>&1)
	case $? in
	0) pass "$name" ;;
	3) # the check's own way of saying the container cannot do it
		cannot "$name" "$(echo "$out" | tail -n 1)"
		out=
		;;
	*)
		fail "$name" "$(echo "$out" | tail -n 1)"
		out=$(echo "$out" | tail -n 20)
		;;
	esac
	[ -z "$out" ] || echo "$out" | sed 's/^/    /'
}

for c in install units-start own-users status sandboxed-tool-call approval kill-9-restart audit-verify \
	ip-address-filter systemctl-stop; do
	inside "$c" sh "/mnt/check/inside/$c.sh"
done

# ---- deploy over ssh, to the same container --------------------------------

port=${BOXMAKER_CHECK_SSH_PORT:-22022}
while ss -Hltn "sport = :$port" | grep -q .; do port=$((port + 1)); done
ssh-keygen -q -t ed25519 -N '' -f "$work/key" -C systemd-check
# deploy USER runs make deploy's script as USER@ the container.
deploy() {
	SSH_OPTS="-o Port=$port -i $work/key -o StrictHostKeyChecking=no -o UserKnownHostsFile=$work/known_hosts -o LogLevel=ERROR" \
		sh "$repo/scripts/deploy.sh" "$bin" "$1@127.0.0.1" 2>&1
}
if ! C sh /mnt/check/inside/deploy-target.sh "$port" "$(cat "$work/key.pub")" >"$work/sshd.log" 2>&1; then
	cannot deploy-over-ssh "sshd did not start in the container: $(tail -n 1 "$work/sshd.log")"
	cannot deploy-to-nixos "sshd did not start in the container"
	finish
fi
if out=$(deploy deployer); then
	pass deploy-over-ssh
else
	fail deploy-over-ssh "$(echo "$out" | tail -n 1)"
fi
echo "$out" | sed 's/^/    /'
# The same host, calling itself NixOS: deploy must leave it alone and point
# to the module.
C touch /etc/NIXOS
if out=$(deploy root); then
	fail deploy-to-nixos "deploy went ahead on a NixOS host"
elif echo "$out" | grep -q 'services.boxmaker = {'; then
	pass deploy-to-nixos
	echo "$out" | head -n 1 | sed 's/^/    /'
else
	fail deploy-to-nixos "$(echo "$out" | tail -n 1)"
fi
C rm -f /etc/NIXOS
finish

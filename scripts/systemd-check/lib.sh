# Shared by the checks that scripts/systemd-check.sh runs inside the
# container, as root: the owner's view of a systemd host.
set -eu

# units are the daemons' units install wrote.
units() {
	for f in /etc/systemd/system/boxmaker-*.service; do basename "$f"; done
}

# all_active waits up to 20 s for every unit to be active and running.
all_active() {
	for _ in $(seq 1 100); do
		ok=1
		for u in $(units); do
			[ "$(systemctl show -P SubState "$u")" = running ] || ok=0
		done
		[ $ok = 1 ] && return 0
		sleep 0.2
	done
	systemctl --no-pager list-units 'boxmaker*'
	return 1
}

# chat runs one turn with the scripted model and prints its reply.
chat() {
	timeout 60 boxmaker chat --message "$1"
}

die() {
	echo "$*"
	exit 1
}

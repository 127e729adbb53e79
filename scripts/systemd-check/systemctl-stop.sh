# systemctl stop boxmaker.target: every unit stops cleanly (result success),
# no process of a role is left, and no socket.
. /mnt/check/inside/lib.sh
t0=$(date +%s%N)
systemctl stop boxmaker.target
# systemctl returns once the target's own job is done; the units PartOf it
# may still be stopping, so each gets up to 30 s.
for u in $(units); do
	for _ in $(seq 1 150); do
		st="$(systemctl show -P ActiveState "$u") $(systemctl show -P Result "$u")"
		[ "$st" = "inactive success" ] && break
		sleep 0.2
	done
	[ "$st" = "inactive success" ] || die "$u: $st 30 s after the stop"
	echo "$u: stopped $((($(date +%s%N) - t0) / 1000000)) ms after systemctl stop began"
	uid=$(id -u "$(systemctl show -P User "$u")")
	for st in /proc/[0-9]*/status; do
		if awk -v u="$uid" '$1 == "Uid:" && $2 == u { f = 1 } END { exit !f }' "$st" 2>/dev/null; then
			die "$u: ${st%/status} still runs as uid $uid"
		fi
	done
done
left=$(find /var/lib/boxmaker/run -type s)
[ -z "$left" ] || die "sockets left: $left"
echo "$(units | wc -l) units inactive, result success"

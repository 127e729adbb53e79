# kill -9 of brokerd: systemd starts it again, and the next turn works.
. /mnt/check/inside/lib.sh
old=$(systemctl show -P MainPID boxmaker-brokerd.service)
kill -9 "$old"
for _ in $(seq 1 100); do
	new=$(systemctl show -P MainPID boxmaker-brokerd.service)
	[ "$new" != 0 ] && [ "$new" != "$old" ] && all_active >/dev/null && break
	sleep 0.2
done
[ "$new" != 0 ] && [ "$new" != "$old" ] || die "brokerd was not restarted"
all_active || die "not every unit came back"
chat "read note open/welcome.md" >/tmp/after-kill.out 2>&1 || { cat /tmp/after-kill.out; die "the turn after the restart failed"; }
echo "brokerd $old -> $new (NRestarts=$(systemctl show -P NRestarts boxmaker-brokerd.service)); the next turn ran its tool call"

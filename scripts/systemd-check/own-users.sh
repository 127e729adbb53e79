# Every process of every unit runs as the unit's own user, a different one
# per unit, with no_new_privs and no capabilities.
. /mnt/check/inside/lib.sh
seen=
for u in $(units); do
	user=$(systemctl show -P User "$u")
	want=$(id -u "$user")
	procs=$(cat "/sys/fs/cgroup$(systemctl show -P ControlGroup "$u")/cgroup.procs")
	[ -n "$procs" ] || die "$u has no process"
	for p in $procs; do
		st=/proc/$p/status
		uid=$(awk '$1 == "Uid:" { print $2 "/" $3 "/" $4 "/" $5 }' "$st")
		[ "$uid" = "$want/$want/$want/$want" ] || die "$u: pid $p runs as uid $uid, not $user ($want)"
		[ "$(awk '$1 == "NoNewPrivs:" { print $2 }' "$st")" = 1 ] || die "$u: pid $p lacks no_new_privs"
		[ "$(awk '$1 == "CapEff:" { print $2 }' "$st")" = 0000000000000000 ] || die "$u: pid $p has capabilities"
	done
	case " $seen " in *" $user "*) die "$user runs two units" ;; esac
	seen="$seen $user"
	echo "$u: $user (uid $want), $(echo "$procs" | wc -w) process(es)"
done

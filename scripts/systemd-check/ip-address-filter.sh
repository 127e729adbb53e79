# inferproxy's unit may reach loopback only (the scripted model): a process
# in its cgroup is refused an outside address. systemd's address filters are
# BPF programs on the unit's cgroup, which a container may not enforce:
# then this says CANNOT (exit 3) with what the probe saw.
. /mnt/check/inside/lib.sh
probe=$(timeout 5 systemd-run --wait --pipe -q -p IPAddressDeny=any bash -c 'exec 3<>/dev/tcp/127.0.0.1/1' 2>&1) || true
case $probe in
*"not permitted"*) ;;
*)
	echo "systemd does not enforce IPAddressDeny= here: a unit with IPAddressDeny=any got \"${probe##*: }\" from 127.0.0.1, not EPERM"
	exit 3
	;;
esac
u=boxmaker-inferproxy.service
echo "$u: IPAddressAllow=$(systemctl show -P IPAddressAllow $u) IPAddressDeny=$(systemctl show -P IPAddressDeny $u)"
cg=/sys/fs/cgroup$(systemctl show -P ControlGroup $u)
# 192.0.2.1 (TEST-NET-1) goes nowhere: refused at once means the filter.
out=$(timeout 5 bash -c "echo \$\$ >$cg/cgroup.procs && exec 3<>/dev/tcp/192.0.2.1/80" 2>&1) || true
case $out in
*"not permitted"*) echo "a process in $u's cgroup is refused 192.0.2.1" ;;
*) die "a process in $u's cgroup was not refused 192.0.2.1: ${out:-it timed out}" ;;
esac

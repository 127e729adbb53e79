# A chat turn whose tool call runs in bubblewrap inside brokerd's unit, with
# the hardening the unit declares (RestrictSUIDSGID= among it: its seccomp
# filter makes openat2 fail with ENOSYS, issue 19).
. /mnt/check/inside/lib.sh
[ "$(systemctl show -P RestrictSUIDSGID boxmaker-brokerd.service)" = yes ] || die "brokerd's unit lacks RestrictSUIDSGID"
pid=$(systemctl show -P MainPID boxmaker-brokerd.service)
grep -q '^Seccomp:[[:space:]]*2' "/proc/$pid/status" || die "brokerd runs without systemd's seccomp filter"
out=$(chat "read note open/welcome.md" 2>&1) || { echo "$out"; die "the turn failed"; }
echo "$out" | grep -q 'call 1: result: 31 bytes' || { echo "$out"; die "the tool call did not run"; }
echo "$out" | grep -q 'welcome from the systemd check' || { echo "$out"; die "the reply lacks the note"; }
echo "notes_read ran in the sandbox under brokerd's unit: $(echo "$out" | grep 'call 1: result')"

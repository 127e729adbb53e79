# A call that needs approval waits until `boxmaker approve ID` answers it.
. /mnt/check/inside/lib.sh
chat "read note ask/private.md" >/tmp/approval.out 2>&1 &
turn=$!
id=
for _ in $(seq 1 100); do
	id=$(boxmaker approvals 2>/dev/null | grep -o 'ap-[0-9a-f]*' | head -n 1) || true
	[ -n "$id" ] && break
	sleep 0.2
done
[ -n "$id" ] || { kill $turn; cat /tmp/approval.out; die "no approval was pending"; }
boxmaker approve "$id"
wait $turn || { cat /tmp/approval.out; die "the turn failed after the approval"; }
grep -q 'the note behind an approval' /tmp/approval.out || { cat /tmp/approval.out; die "the reply lacks the note"; }
boxmaker audit tail | grep -q '"decision":{"outcome":"approved","grant":"notes-ask","approver":"local:' ||
	die "the audit log lacks the approval"

# boxmaker status knows the units and says every role is running.
. /mnt/check/inside/lib.sh
out=$(boxmaker status) || { echo "$out"; die "boxmaker status failed"; }
echo "$out"
n=$(echo "$out" | grep -c '^[a-z]* *running ') || true
[ "$n" = "$(units | wc -l)" ] || die "status shows $n roles running, not $(units | wc -l)"

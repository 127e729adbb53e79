# The audit chain of every call above verifies.
. /mnt/check/inside/lib.sh
boxmaker audit verify

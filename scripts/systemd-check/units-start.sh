# systemctl start boxmaker.target brings every unit up.
. /mnt/check/inside/lib.sh
systemctl start boxmaker.target
all_active || die "not every unit is running"
echo "$(units | wc -l) units running"

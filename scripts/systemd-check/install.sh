# boxmaker install --systemd from the one file, with the scripted model as
# the upstream (inferproxy serves it itself on 127.0.0.1) and two grants.
. /mnt/check/inside/lib.sh
mkdir -p /etc/boxmaker/grants
printf '[infer]\nupstream = "scripted:"\n' >/etc/boxmaker/config.toml
cp /mnt/check/inside/grants/*.toml /etc/boxmaker/grants/
/mnt/check/boxmaker install --systemd >/tmp/install.log 2>&1 || { tail -n 20 /tmp/install.log; die "install --systemd failed"; }
[ "$(systemctl is-enabled boxmaker.target)" = enabled ] || die "boxmaker.target is not enabled"
boxmaker grants check >/dev/null || die "boxmaker grants check failed"
# The notes the tool calls read: brokerd's, in memory/.
for d in open ask; do
	install -d -o boxmaker-broker -g boxmaker-broker -m 0700 "/var/lib/boxmaker/memory/notes/$d"
done
echo "welcome from the systemd check" >/var/lib/boxmaker/memory/notes/open/welcome.md
echo "the note behind an approval" >/var/lib/boxmaker/memory/notes/ask/private.md
chown boxmaker-broker: /var/lib/boxmaker/memory/notes/*/*
echo "installed $(boxmaker --version): $(units | tr '\n' ' ')"

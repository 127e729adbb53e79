# The container as a deploy target: sshd on loopback only, on port $1,
# root by the key $2 alone. The installed binary is removed first, so the
# deploy check passes only if deploy itself put one there.
. /mnt/check/inside/lib.sh
rm -f /usr/local/bin/boxmaker
printf 'Port %s\nListenAddress 127.0.0.1\nPasswordAuthentication no\nPermitRootLogin prohibit-password\n' "$1" \
	>/etc/ssh/sshd_config.d/boxmaker-check.conf
install -d -m 0700 /root/.ssh
echo "$2" >/root/.ssh/authorized_keys
systemctl start ssh.service

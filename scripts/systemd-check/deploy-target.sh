# The container as a deploy target: sshd on loopback only, on port $1, for
# root and for "deployer" (who has sudo without a password, as on a host
# where root has no ssh login), each by the key $2 alone. The installed
# binary is removed first, so the deploy check passes only if deploy itself
# put one there.
. /mnt/check/inside/lib.sh
rm -f /usr/local/bin/boxmaker
printf 'Port %s\nListenAddress 127.0.0.1\nPasswordAuthentication no\nPermitRootLogin prohibit-password\n' "$1" \
	>/etc/ssh/sshd_config.d/boxmaker-check.conf
install -d -m 0700 /root/.ssh
echo "$2" >/root/.ssh/authorized_keys
id deployer >/dev/null 2>&1 || useradd --create-home --shell /bin/sh deployer
install -d -m 0700 -o deployer -g deployer /home/deployer/.ssh
echo "$2" >/home/deployer/.ssh/authorized_keys
chown deployer: /home/deployer/.ssh/authorized_keys
echo 'deployer ALL=(root) NOPASSWD: ALL' >/etc/sudoers.d/deployer
chmod 0440 /etc/sudoers.d/deployer
# The container has the machine's host name; sudo wants to resolve it.
name=$(cat /proc/sys/kernel/hostname)
grep -qw "$name" /etc/hosts || echo "127.0.1.1 $name" >>/etc/hosts
systemctl start ssh.service

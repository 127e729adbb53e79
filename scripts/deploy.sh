#!/bin/sh
# make deploy HOST=[user@]host [SSH_OPTS="-o Port=2222 -i KEY"]: copy the one file
# to HOST, install it there with `boxmaker install --systemd` (as root:
# through `sudo -n` when the ssh user is not root), restart the units, and
# fail unless `boxmaker status` reports every role running within a minute.
# On NixOS it changes nothing: the module is the way, and it prints the
# lines to add. SSH_OPTS go to both ssh and scp, so give a port as
# -o Port=N (scp's -p is not ssh's). Usage: scripts/deploy.sh BINARY HOST
set -eu
bin=$1 host=$2
# shellcheck disable=SC2086 # SSH_OPTS is a list of options on purpose
sshx() { ssh ${SSH_OPTS:-} -o BatchMode=yes "$host" "$@"; }

[ -x "$bin" ] || { echo "deploy: $bin is not built (make build)" >&2; exit 1; }
local_version=$("$bin" --version)

# A directory of the ssh user's own (0700, from mktemp -d), never a name in
# /tmp that another user of the host could swap before root runs it.
dir=$(sshx 'if [ -e /etc/NIXOS ]; then echo NIXOS; else mktemp -d; fi')
if [ "$dir" = NIXOS ]; then
	cat >&2 <<EOT
deploy: $host runs NixOS: boxmaker is deployed there by its NixOS module, not by install.
Add to the host's configuration (docs/deploy.md, "NixOS"):

  imports = [ /path/to/boxmaker/nix/module.nix ];   # or the flake's nixosModules.default
  services.boxmaker = {
    enable = true;
    upstream = "http://127.0.0.1:8080";   # the llama-server
  };

then run: nixos-rebuild switch --target-host $host
EOT
	exit 1
fi
case $dir in /*) ;; *) echo "deploy: mktemp -d on $host said: $dir" >&2; exit 1 ;; esac

echo "deploy: copying $bin ($local_version) to $host:$dir/boxmaker"
# shellcheck disable=SC2086
scp -q ${SSH_OPTS:-} -o BatchMode=yes "$bin" "$host:$dir/boxmaker"
# ssh joins its arguments into one command line for the remote shell, so
# the two that hold spaces are quoted (neither can hold a quote: a version
# from git describe, a path from mktemp).
sshx "sh -s '$dir' '$local_version'" <<'EOT'
set -eu
dir=$1 want=$2
sudo=; [ "$(id -u)" = 0 ] || sudo="sudo -n"
trap 'rm -rf "$dir"' EXIT
$sudo "$dir/boxmaker" install --systemd
$sudo systemctl restart boxmaker.target
have=$(/usr/local/bin/boxmaker --version)
[ "$have" = "$want" ] || { echo "deploy: /usr/local/bin/boxmaker is $have, not $want" >&2; exit 1; }
# status exits 0 only when every installed unit runs; "runs under systemd"
# shows it found the units at all (a status that does not know them says
# "not up" and exits 0).
i=0
until out=$($sudo /usr/local/bin/boxmaker status 2>&1) && case $out in *"runs under systemd"*) true ;; *) false ;; esac; do
	i=$((i + 1))
	if [ $i -ge 60 ]; then
		echo "$out"
		echo "deploy: not every role is running a minute after the restart" >&2
		exit 1
	fi
	sleep 1
done
echo "$out"
EOT
echo "deploy: $host runs $local_version, every role running"

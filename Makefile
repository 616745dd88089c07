# limitbench: build, test and demo targets. Everything runs against real Redis servers that the
# tests start themselves on free loopback ports.
SHELL := /bin/bash
GO ?= go
BIN := bin/limitbench
export TESTCONTAINERS_HOST_OVERRIDE ?= 127.0.0.1
export TESTCONTAINERS_RYUK_DISABLED ?= true

.PHONY: all build test check bench bench-loadgen bench-gate demo redis-image redis-server clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/limitbench

# redis-server: install it with apt-get on Debian-like systems when we are root, else say what to do.
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server and redis-tools with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools; \
	  else \
	    echo "redis-server is not on PATH: install it (Debian/Ubuntu: sudo apt-get install redis-server redis-tools; macOS: brew install redis)"; exit 2; \
	  fi; \
	fi

test: redis-server
	$(GO) test -race -timeout 30m ./...

check: redis-server
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test -race -timeout 30m ./...

# Every benchmark in bench/, in the standard format benchstat reads.
bench: redis-server
	$(GO) test -run '^$$' -bench . -benchtime 2x -timeout 30m ./bench/

# limitbench's load generator against redis-benchmark for the same script, connections and
# pipeline depth (depth 1 and 16): throughput (ratio-d1, ratio-d16), CPU per request (cpu-ratio-d1,
# cpu-ratio-d16), allocations per request, recording on over off. On a redis-server process it
# starts, or with LOADGEN_REDIS=redis://127.0.0.1:PORT on that server as an external backend
# (keys lb:{N} are written there). LOADGEN_ROUNDS=N: N paired rounds instead of 5. About 2 minutes.
LOADGEN_ARGS = $(strip $(if $(LOADGEN_REDIS),-loadgen-redis=$(LOADGEN_REDIS)) $(if $(LOADGEN_ROUNDS),-loadgen-rounds=$(LOADGEN_ROUNDS)))
bench-loadgen: redis-server
	$(GO) test -run '^$$' -bench '^BenchmarkLoadgen$$' -benchtime 1x -timeout 30m -v ./bench/ $(if $(LOADGEN_ARGS),-args $(LOADGEN_ARGS))

# The CI gate's power and false-alarm rate (issue 13): real limitbench run and gate comparisons of a
# script against itself and against copies made 10 to 300% costlier, on a quiet machine and beside
# a process keeping one CPU half busy; prints detections, false alarms, median MDE and the checks.
# About 13 minutes. GATE_RUN_FLAGS adds flags to every run (GATE_RUN_FLAGS=--awake=false: CPUs left to idle).
bench-gate: redis-server
	$(GO) test -run '^$$' -bench '^BenchmarkGatePower$$' -benchtime 1x -timeout 20m -v ./bench/ -args -gate-power -gate-power-run-flags '$(GATE_RUN_FLAGS)'

# The offline container image built FROM scratch from the host's redis-server (tag printed).
redis-image: build
	$(BIN) env --backend container --image host --build-only

# The demo run (about 70 s), then the hunt that demonstrates the published variants the run can
# only tolerate (scenarios/hunt-published.yaml, about 3 minutes: fixed-window-published's trials
# wait for minute boundaries). Each prints "results: DIR" itself, only when it wrote them; open
# DIR/report.html. --force: a second make demo writes over the first.
demo: redis-server build
	$(BIN) run --force --out results/demo scenarios/demo.yaml
	$(BIN) hunt --force --budget 10s --out results/demo-hunt scenarios/hunt-published.yaml

clean:
	rm -rf bin

# limitbench: build, test and demo targets. Everything runs against real Redis servers that the
# tests start themselves on free loopback ports.
SHELL := /bin/bash
GO ?= go
BIN := bin/limitbench
export TESTCONTAINERS_HOST_OVERRIDE ?= 127.0.0.1
export TESTCONTAINERS_RYUK_DISABLED ?= true

.PHONY: all build test check bench bench-loadgen bench-gate bench-soak demo redis-image redis-server clean \
	release-snapshot image

# What a build says it is (internal/version, `limitbench version`): the newest v* tag as git
# describe tells it, or v0.0.0-<commit> without a tag ("-dirty" with uncommitted changes); the
# commit and its date (UTC). goreleaser sets the same for a release.
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
DATE := $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null)
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
	echo "v0.0.0-$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty)")
VERSION_PKG := github.com/limitbench/limitbench/internal/version
LDFLAGS := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).date=$(DATE)

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/limitbench

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

# TESTFLAGS adds go test flags (.ci/run gives -v, to list every skipped test with its reason).
# -p 3: three packages' tests at once. Most tests wait on Redis, timers and child processes (a
# whole make test keeps about half of 2 CPUs busy), and cmd/limitbench's alone takes about as long
# as all the others together: with two at once they queue behind it.
test: redis-server
	$(GO) test -race -p 3 -timeout 30m $(TESTFLAGS) ./...

check: redis-server
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test -race -p 3 -timeout 30m ./...

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
# BenchmarkGatePower's size: trials per condition, --repeat of every run (a number or auto), the
# budget of each run's rounds under auto, the conditions (quiet, busy: a competitor keeping one CPU
# half busy), and the time for the whole benchmark. Runs on a shared machine are slow: lower the
# trials and say so.
BENCH_GATE_TRIALS ?= 10
BENCH_GATE_REPEAT ?= 6
BENCH_GATE_REPEAT_BUDGET ?= 2m
BENCH_GATE_CONDITIONS ?= quiet,busy
BENCH_GATE_BUDGET ?= 14m
BENCH_GATE_TIMEOUT ?= 20m
bench-gate: redis-server
	$(GO) test -run '^$$' -bench '^BenchmarkGatePower$$' -benchtime 1x -timeout $(BENCH_GATE_TIMEOUT) -v ./bench/ -args -gate-power -gate-power-run-flags '$(GATE_RUN_FLAGS)' \
		-gate-power-trials $(BENCH_GATE_TRIALS) -gate-power-repeat $(BENCH_GATE_REPEAT) -gate-power-repeat-budget $(BENCH_GATE_REPEAT_BUDGET) \
		-gate-power-conditions $(BENCH_GATE_CONDITIONS) -gate-power-budget $(BENCH_GATE_BUDGET)

# Soaks (issue 30): peak RSS of saturation runs of gcra (--no-reference) of 30 s and 300 s verifying
# as they run, the 30 s run again with --whole-history (paired: the throughput ratio), and the peak
# RSS of merging a 3-segment 120 s run; medians of SOAK_ROUNDS paired rounds (default 2: the 300 s
# run dominates, about 9 minutes a round) with ranges, and issue 30's targets met or not. Then the
# streaming verifier's events per CPU second (verify's BenchmarkStream).
SOAK_ROUNDS ?= 2
bench-soak: redis-server
	$(GO) test -run '^$$' -bench '^BenchmarkSoak$$' -benchtime 1x -timeout 120m -v ./bench/ -args -soak -soak-rounds $(SOAK_ROUNDS) $(SOAK_ARGS)
	$(GO) test -run '^$$' -bench '^BenchmarkStream$$' -benchtime 1x -timeout 20m ./verify/

# goreleaser, pinned in its own module (build/tools: its hundreds of dependencies stay out of
# limitbench's go.mod), built from the Go module proxy.
GORELEASER := bin/goreleaser
$(GORELEASER): build/tools/go.mod build/tools/go.sum
	$(GO) build -C build/tools -o $(CURDIR)/$(GORELEASER) github.com/goreleaser/goreleaser/v2

# Every archive, checksums.txt and the deb and rpm packages in dist/, as a release would make
# them (.goreleaser.yaml), offline: nothing is published or signed.
# goreleaser drops every commit value (commit "none") from a checkout without a remote (a new
# repository, a copy); such a checkout gets the project's URL through git's environment, nothing
# in the repository changes.
release-snapshot: $(GORELEASER)
	@if [ -z "$$(git remote 2>/dev/null)" ]; then \
	  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/limitbench/limitbench.git; \
	fi; \
	echo $(GORELEASER) release --snapshot --clean --skip=publish; \
	$(GORELEASER) release --snapshot --clean --skip=publish

# The image limitbench:$(VERSION) and limitbench:latest with redis-server and redis-sentinel
# inside (deploy/image): from the public base images when both are present locally, else FROM
# scratch from this machine's files; IMAGE_FROM=registry or host chooses. It says which it took.
IMAGE ?= limitbench
IMAGE_FROM ?= auto
image:
	IMAGE=$(IMAGE) FROM=$(IMAGE_FROM) VERSION=$(VERSION) COMMIT=$(COMMIT) DATE=$(DATE) GO=$(GO) deploy/image/build.sh

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
	rm -rf bin dist

# faultline: the two commands a new user needs are `make demo` and
# `make test`; both install missing Debian packages first (`make test` the
# toolchain, QEMU, GDB, chromium and PostgreSQL its acceptance tests drive,
# too).

GO      ?= go
BIN     := bin/faultline
DEMO_ELF  := firmware-samples/build/gcc-m3-O2.elf
DEMO_DUMP := fixtures/qemu/gcc-m3-O2-null_write_deep.json

.PHONY: all deps toolchain build demo test vet race fuzz firmware firmware-check oracle clean accuracy regress-example matrix matrix-readme hostile-check bench-peers bench-rtos-batch

all: build

deps:
	@.ci/install-deps.sh

toolchain:
	@.ci/install-deps.sh --toolchain

build: deps
	$(GO) build -o $(BIN) ./cmd/faultline

# Decode a bundled sample crash (a NULL write at the end of a deep call
# chain, captured from QEMU by GDB) against its firmware.
demo: build
	$(BIN) analyze --elf $(DEMO_ELF) $(DEMO_DUMP)

# Every test, with the race detector. The acceptance tests drive the
# cross toolchain, QEMU, gdb-multiarch and chromium: they are installed
# first, and FAULTLINE_REQUIRE_TOOLS=1 makes a test whose tool is still
# missing fail and name it instead of skipping silently.
test: toolchain
	$(GO) vet ./...
	FAULTLINE_REQUIRE_TOOLS=1 $(GO) test -race -count=1 -timeout 30m ./...

# Run each fuzz target for a fixed budget, after the committed corpus of
# hostile inputs (fixtures/hostile) has been checked against the errors it
# must give. FUZZMINTIME keeps Go from spending the whole budget
# minimising its first new input.
FUZZTIME ?= 20s
FUZZMINTIME ?= 3s
fuzz: deps
	$(GO) test -count=1 -run TestHostileCorpus ./cmd/faultline/cli
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list 'Fuzz.*' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; $(GO) test -run XXX -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) $$pkg; \
	  done; done

# The hostile corpus is generated from the committed fixtures: regenerating
# it must change nothing.
hostile-check: deps
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) run ./fixtures/hostile/_gen -o "$$tmp"; \
	bad=0; n=0; for f in $$(cd "$$tmp" && find . -type f | sort); do \
		n=$$((n+1)); cmp -s "$$tmp/$$f" "fixtures/hostile/$$f" || { echo "DIFFERS: fixtures/hostile/$$f"; bad=1; }; \
	done; \
	if [ $$bad = 0 ]; then echo "hostile-check: all $$n generated files match fixtures/hostile"; fi; exit $$bad

# Rebuild the sample firmware (needs the cross toolchain).
firmware: toolchain
	$(MAKE) -C firmware-samples

# Check that rebuilding the samples reproduces the committed ELFs.
firmware-check: toolchain
	$(MAKE) -C firmware-samples check
	$(MAKE) -C firmware-samples/regress check
	$(MAKE) -C firmware-samples/matrix check
	$(MAKE) -C firmware-samples/heap check
	$(MAKE) -C firmware-samples/capture/recorder check
	$(MAKE) -C firmware-samples/rtos-zephyr check
	$(MAKE) -C firmware-samples/cxx check
	$(MAKE) -C firmware-samples/rtos-freertos check
	$(MAKE) -C elfsym/testdata/cxx check
	$(MAKE) -C firmware-samples/buildid check
	$(MAKE) -C firmware-samples/noreturn check
	$(MAKE) -C firmware-samples/dispatch check
	$(MAKE) -C firmware-samples/excentry check
	$(MAKE) -C firmware-samples/rtt check
	$(MAKE) -C firmware-samples/zephyr-log check
	$(MAKE) -C firmware-samples/assert check

# Regenerate the QEMU + GDB oracle fixtures.
oracle: toolchain
	$(MAKE) -C firmware-samples oracle

clean:
	rm -rf bin

# Refresh the per-build accuracy table of every strategy against the QEMU
# oracle (fixtures/accuracy.md, and the copy in README.md).
accuracy:
	$(GO) test ./cmd/faultline/cli -run 'TestAccuracyTable' -count=1 -update

# The example regression spec for the sample firmware must pass (JUnit in
# reports/), and the deliberately broken build (a HardFault handler that
# clobbers LR before the capture code reads it) must fail with status 1.
regress-example: build
	$(BIN) regress firmware-samples/regress/sample.json --junit reports/regress-sample.xml
	$(BIN) regress firmware-samples/heap/regress.json --junit reports/regress-heap.xml
	$(BIN) regress firmware-samples/regress/rtos.json --junit reports/regress-rtos.xml
	@status=0; $(BIN) regress firmware-samples/regress/broken.json --junit reports/regress-broken.xml >/dev/null 2>&1 || status=$$?; \
	if [ $$status -ne 1 ]; then echo "regress broken.json: exit status $$status, want 1"; exit 1; fi; \
	echo "regress broken.json: fails as it must (exit 1, reports/regress-broken.xml)"

# Every (build, scenario) of the sample matrix in the emulator, every
# strategy scored against the true call stack; fails on a failure that
# firmware-samples/matrix/known-failures.txt does not list.
matrix: build
	$(BIN) matrix -o reports/matrix.html --format html
	$(BIN) matrix

# Refresh the matrix table in README.md.
matrix-readme: build
	$(BIN) matrix --update-readme README.md

# Time faultline against addr2line, llvm-symbolizer and gdb-multiarch on
# the same inputs, plus batch throughput and the synthetic 50,000-function
# firmware (fixtures/bench/README.md). Minutes; not part of CI.
bench-peers: toolchain
	fixtures/bench/peers.sh $(BENCHFLAGS)

# The RTOS batch as whole processes: 500 copies of a 13-task FreeRTOS dump
# through analyze -j 1 --format jsonl; prints dumps per CPU-second (user +
# system, start-up included). RTOSBATCHFLAGS="-n 2000 -r 11" for more.
bench-rtos-batch:
	fixtures/bench/rtos-batch.sh $(RTOSBATCHFLAGS)

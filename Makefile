# cairn — top-level entry points.  Meson + Ninja do the building; this file only
# names the jobs a person runs:
#   make            build (build/)
#   make run        the demo: `cairn policy` on the example policies
#   make test       install what is missing, build normal + ASan/UBSan, run every test
#   make bench      benchmarks against their peers: cedar-wasm, bwrap, mitmproxy (ratios printed)
#   make fuzz       libFuzzer targets, each for FUZZ_SECONDS
#   make conformance  the long differential runs

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: all build asan run test bench fuzz conformance clean deps deps-test deps-run deps-bench node-deps

all: build

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

deps-run:
	@scripts/deps.sh run

deps-bench:
	@scripts/deps.sh bench

$(BUILD)/build.ninja: | deps
	@rm -rf $(BUILD)
	meson setup $(BUILD) >/dev/null

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(ASAN_BUILD)/build.ninja: | deps
	@rm -rf $(ASAN_BUILD)
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false >/dev/null

asan: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)

node-deps: deps-test
	@if [ ! -d node_modules/@cedar-policy/cedar-wasm ] || \
	    [ package-lock.json -nt node_modules/.package-lock.json ]; then \
		npm ci --no-audit --no-fund --loglevel=error; fi

run: build deps-run
	@scripts/demo.sh $(BUILD)/cairn

test: deps-test node-deps
	@$(MAKE) --no-print-directory build asan
	@scripts/test.sh $(BUILD) $(ASAN_BUILD)

bench: deps-bench node-deps
	@$(MAKE) --no-print-directory build
	@scripts/bench.sh $(BUILD)
	@echo
	@# decision records, per record, against Box's file discipline (bench/README.md)
	@$(BUILD)/records-bench --dir $(BUILD)

conformance: build node-deps
	@scripts/conformance.sh $(BUILD)

$(FUZZ_BUILD)/build.ninja:
	@scripts/deps.sh fuzz
	@rm -rf $(FUZZ_BUILD)
	CC=clang meson setup $(FUZZ_BUILD) -Dfuzz=true --buildtype=debug \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null

fuzz: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

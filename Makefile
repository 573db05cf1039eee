# Front door: CMake + Ninja do the building; this file installs what a
# target needs from Debian and names the everyday commands.
#   make            build build/bin/ctrace, build/lib/libctrace.{so,a}
#   make demo       trace an example program into demo.trace
#   make check      all tests: plain, ASan+UBSan, TSan
#   make bench      benchmarks (BENCH lines)
#   make fuzz       fuzz the trace reader (FUZZ_SECONDS=600; fuzz/README.md)
#   make install PREFIX=/usr/local

PREFIX ?= /usr/local
BUILD_PKGS := cmake ninja-build gcc g++ libdw-dev pkg-config zlib1g-dev libdeflate-dev
TEST_PKGS := $(BUILD_PKGS) libcmocka-dev libunwind-dev golang-go curl clang libclang-rt-14-dev \
  bookworm-backports/golang-1.22-go bookworm-backports/golang-1.23-go protobuf-compiler jq gdb \
  python3 libc6-dbg xz-utils rustc postgresql sqlite3 rsync redis-server memcached zstd \
  netcat-openbsd openssl perl make git bsdutils nodejs nginx-light
BENCH_PKGS := $(BUILD_PKGS) libunwind-dev time golang-go bookworm-backports/golang-1.23-go \
  libpython3.11 rustc postgresql git
JOBS ?= $(shell nproc)

define configure
	@test -f $(1)/build.ninja || cmake -S . -B $(1) -G Ninja $(2) >/dev/null
endef

.PHONY: all deps test-deps build demo check check-plain check-asan check-tsan bench install clean

all: deps build

deps:
	@scripts/deps.sh $(BUILD_PKGS)

# Go 1.24, 1.26 and 1.27, which bookworm lacks, are downloaded from trixie
# and sid by a private apt configuration and unpacked into build/go/
# (scripts/go-oracles.sh): the machine's apt sources are left alone.
test-deps:
	@scripts/deps.sh $(TEST_PKGS)
	@scripts/go-oracles.sh build

build:
	$(call configure,build,-DCMAKE_INSTALL_PREFIX=$(PREFIX))
	@cmake --build build -j $(JOBS)

demo: deps build
	@build/bin/ex_threads demo.trace
	@echo
	@echo "Wrote demo.trace. Look at it with Go's viewer:"
	@echo "    go tool trace demo.trace        (Go 1.22 or later; Debian 12:"
	@echo "                                     apt-get install -t bookworm-backports golang-1.23-go,"
	@echo "                                     then /usr/lib/go-1.23/bin/go tool trace demo.trace)"

# The sanitizer builds run every test with our code under ASan+UBSan or
# TSan; Go's web pages, which test Go's code on the same traces, are
# served in the plain run only (GO_COMPAT_PARSE_ONLY, tests/lib/go_compat.sh).
check: test-deps
	@$(MAKE) --no-print-directory check-plain check-asan check-tsan

# Go's outputs for the traces Go and ctrace are compared on, and Go's
# builds, are shared by the three stages (tests/parse/golden*.sh,
# tests/analyse/pprof_vs_go.sh, stats_vs_go123.sh, tests/lib/gotrace_build.sh); so
# are the traces Go writes for them, which the plain stage writes anew
# (tests/lib/gotrace_write.sh).
export CTRACE_GO_WORK := $(CURDIR)/build/go-work

check-plain: build
	@rm -rf $(CTRACE_GO_WORK)/traces
	@cd build && ctest --output-on-failure -j $(JOBS)

check-asan:
	$(call configure,build-asan,-DCTRACE_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug)
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 GO_COMPAT_PARSE_ONLY=1 \
	  ctest --output-on-failure -j $(JOBS)

check-tsan:
	$(call configure,build-tsan,-DCTRACE_SANITIZE=thread)
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1 GO_COMPAT_PARSE_ONLY=1 \
	  ctest --output-on-failure -L concurrent -j $(JOBS)

# libunwind only for the comparison case; reconfigure so CMake sees it
# when it was installed after the first configure.
bench:
	@scripts/deps.sh $(BENCH_PKGS)
	@scripts/go-oracles.sh build
	$(call configure,build,-DCMAKE_INSTALL_PREFIX=$(PREFIX))
	@cmake -S . -B build >/dev/null
	@cmake --build build -j $(JOBS)
	@build/bin/bench_events
	@build/bin/bench_events -f go1.22 -c event-nostack,event-stack16,user-log,user-log-long,flight-nostack,flight-stack16
	@build/bin/bench_events -f go1.11 -c sched-mix,sched-log-mix
	@build/bin/bench_flight
	@build/bin/bench_cpu
	@build/bin/bench_unwind_tables
	@bench/bench_run.sh build
	@bench/bench_programs.sh build
	@bench/bench_dump.sh build
	@bench/bench_dump122.sh build
	@bench/bench_big.sh build 23
	@bench/bench_big.sh build 27
	@bench/bench_churn.sh build 23
	@bench/bench_procs.sh build
	@bench/bench_dump127.sh build
	@bench/bench_export.sh build
	@bench/bench_scale.sh build

install: deps build
	@cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-tsan build-fuzz

# ---- fuzzing the reader (fuzz/README.md) -----------------------------------
# libFuzzer needs clang; the harness is built straight from the reader's
# sources, outside CMake. Crashes fail the target and stay in build-fuzz/.
FUZZ_SECONDS ?= 600
# 0: libFuzzer picks a seed (make fuzz explores). fuzz-ci runs every input
# of fuzz/corpus (what the fuzzer found, kept) and no new one: a mutating
# run is not the same run twice (the same seed and inputs, two runs reach
# different coverage), so it belongs to make fuzz, not to a CI that must
# not fail by chance.
FUZZ_SEED ?= 0
FUZZ_RUNS ?=
FUZZ_CC ?= clang
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -fno-omit-frame-pointer -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Iinclude -Isrc
FUZZ_SRCS = $(wildcard src/parse/*.c src/parse/classic/*.c src/parse/go122/*.c) \
  src/runtime/startname.c src/format.c src/error.c fuzz/fuzz_reader.c
# The analyses and exporters, built with -fwrapv as CMake builds them (their
# int64 times wrap, as Go's do), UBSan's other checks on.
FUZZ_WRAPV_SRCS = $(wildcard src/analyse/*.c src/export/*.c)

.PHONY: fuzz fuzz-ci fuzz-seeds

build-fuzz/fuzz_reader: $(FUZZ_SRCS) $(FUZZ_WRAPV_SRCS) $(wildcard src/parse/*.h src/parse/go122/*.h src/analyse/*.h src/export/*.h include/ctrace/*.h)
	@rm -rf build-fuzz/wrapv && mkdir -p build-fuzz/wrapv
	cd build-fuzz/wrapv && $(FUZZ_CC) $(FUZZ_CFLAGS:-I%=-I$(CURDIR)/%) -fwrapv -c $(abspath $(FUZZ_WRAPV_SRCS))
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRCS) build-fuzz/wrapv/*.o -ldeflate -lz -lm -lpthread

fuzz: test-deps
	@$(MAKE) --no-print-directory build-fuzz/fuzz_reader
	@fuzz/run.sh build-fuzz $(FUZZ_SECONDS) -seed=$(FUZZ_SEED) $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS))

fuzz-ci:
	@rm -rf build-fuzz/ci-corpus
	@FUZZ_CORPUS=build-fuzz/ci-corpus $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=0 FUZZ_SEED=1 FUZZ_RUNS=0

# Rewrites the ctrace-made seeds in fuzz/corpus/ (fuzz/seed_gen.c).
fuzz-seeds: build
	$(CC) -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Iinclude fuzz/seed_gen.c \
	  -o build/fuzz_seed_gen -Lbuild/lib -lctrace -Wl,-rpath,$(CURDIR)/build/lib -lpthread
	build/fuzz_seed_gen fuzz/corpus

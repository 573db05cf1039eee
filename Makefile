# Front door: CMake + Ninja do the building; this file installs what a
# target needs from Debian and names the everyday commands.
#   make            build build/bin/ctrace, build/lib/libctrace.{so,a}
#   make demo       trace an example program into demo.trace
#   make check      all tests: plain, ASan+UBSan, TSan
#   make bench      benchmarks (BENCH lines)
#   make install PREFIX=/usr/local

PREFIX ?= /usr/local
BUILD_PKGS := cmake ninja-build gcc g++ libdw-dev pkg-config
TEST_PKGS := $(BUILD_PKGS) libcmocka-dev golang-go curl
BENCH_PKGS := $(BUILD_PKGS) libunwind-dev
JOBS ?= $(shell nproc)

define configure
	@test -f $(1)/build.ninja || cmake -S . -B $(1) -G Ninja $(2) >/dev/null
endef

.PHONY: all deps test-deps build demo check check-plain check-asan check-tsan bench install clean

all: deps build

deps:
	@scripts/deps.sh $(BUILD_PKGS)

test-deps:
	@scripts/deps.sh $(TEST_PKGS)

build:
	$(call configure,build,-DCMAKE_INSTALL_PREFIX=$(PREFIX))
	@cmake --build build -j $(JOBS)

demo: deps build
	@build/bin/ex_threads demo.trace
	@echo
	@echo "Wrote demo.trace. Look at it with Go's viewer:"
	@echo "    go tool trace demo.trace        (Debian: apt-get install golang-go)"

check: test-deps
	@$(MAKE) --no-print-directory check-plain check-asan check-tsan

check-plain: build
	@cd build && ctest --output-on-failure -j $(JOBS)

check-asan:
	$(call configure,build-asan,-DCTRACE_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug)
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

check-tsan:
	$(call configure,build-tsan,-DCTRACE_SANITIZE=thread)
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L concurrent -j $(JOBS)

# libunwind only for the comparison case; reconfigure so CMake sees it
# when it was installed after the first configure.
bench:
	@scripts/deps.sh $(BENCH_PKGS)
	$(call configure,build,-DCMAKE_INSTALL_PREFIX=$(PREFIX))
	@cmake -S . -B build >/dev/null
	@cmake --build build -j $(JOBS)
	@build/bin/bench_events

install: deps build
	@cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-tsan

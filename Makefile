# The two README commands: `make demo` (set up, build, run the default experiment) and
# `make test` (set up, build, run the whole test suite). Everything else is CMake.

BUILD ?= build
JOBS ?= 2
PELAB := $(BUILD)/bin/pelab
DEMO_MANIFEST ?= tasks/latin_square/experiments/quick.toml
# The demo is quick.toml cut to one seed and a 90-epoch schedule (5 warm-up, cosine over 90):
# sigma 0.2 and sigma 2.0 trained side by side, in their own experiment folder (lst-demo) so that
# the full protocol never resumes from a demo run.
DEMO_ARGS ?= --set 'experiment.seeds=[2235]' --set experiment.name=lst-demo \
	--set train.epochs=90 --set train.warmup_epochs=5 \
	--set 'experiment.description="Demo: learned PE sigma 0.2 vs 2.0; small model, one seed (2235), 90 epochs"' \
	-j 2
# Clang compiles pelab about three times faster than GCC: its precompiled header holds LibTorch's
# template instantiations, which GCC redoes in every file (docs/building.md). GCC works too:
# `make build CXX_COMPILER=g++`, or plain CMake.
CXX_COMPILER ?= clang++-14

# Debian 12 packages: compilers and build tools (Clang and its linker, LLD, which links a program
# against LibTorch in a tenth of the time GNU ld takes), the libraries pelab links, the fast BLAS that
# LibTorch's matrix products need (the reference BLAS is ~40x slower), gnuplot for figures,
# a single-node Slurm for the cluster tests (docs/cluster.md), and real brain atlases in MNI space
# (mricron-data: AAL, Harvard-Oxford, AICHA; docs/tasks/brain.md); xz for the run-record archives
# that the docs_claims test unpacks (docs/results).
DEBIAN_PACKAGES := g++ clang-14 libclang-rt-14-dev lld-14 cmake make ccache \
	libtorch-dev libopenblas0-openmp \
	libboost-dev libboost-filesystem-dev libfmt-dev libtomlplusplus-dev \
	libcli11-dev libspdlog-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev \
	libnifti2-dev libgloo-dev slurmctld slurmd slurm-client munge \
	python3-numpy python3-torch python3-venv gnuplot-nox chromium mricron-data xz-utils

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build demo test test-sanitize build-current-torch test-current-torch clean

deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	@# The compiler is chosen when the build folder is made; an existing folder keeps its own.
	if [ -f $(BUILD)/CMakeCache.txt ]; then cmake $(BUILD); else \
	  cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=$(CXX_COMPILER); fi
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	$(PELAB) run $(DEMO_MANIFEST) $(DEMO_ARGS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# The test suite again, built with AddressSanitizer (leak checks included) and
# UndefinedBehaviorSanitizer (Clang's runtimes), and each fuzz target run for FUZZ_SECONDS under
# libFuzzer (docs/testing.md). Any report fails the test that raised it; nothing is suppressed.
# -O1 and line tables only: what the sanitizers need for their reports, and a faster build. The
# tests labelled `long` (end-to-end runs that spend minutes inside LibTorch, which is not
# instrumented, or in an out-of-tree build) run in `make test` only.
SANITIZE_BUILD ?= build-sanitize
FUZZ_SECONDS ?= 30
FUZZ_SEED ?= 2235
SANITIZE_OPTIONS := ASAN_OPTIONS=abort_on_error=1:strict_string_checks=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
test-sanitize: deps
	if [ ! -f $(SANITIZE_BUILD)/CMakeCache.txt ]; then \
	  cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
	        -DPELAB_SANITIZE=ON -DPELAB_FUZZ=ON -DCMAKE_CXX_COMPILER=$(CXX_COMPILER) \
	        -DPELAB_BUILD_BENCHMARKS=OFF; fi
	cmake $(SANITIZE_BUILD) -DPELAB_FUZZ_SECONDS=$(FUZZ_SECONDS) -DPELAB_FUZZ_SEED=$(FUZZ_SEED)
	cmake --build $(SANITIZE_BUILD) -j$(JOBS)
	$(SANITIZE_OPTIONS) ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j$(JOBS) -LE long

# The second supported build: pelab against the LibTorch inside a current PyTorch wheel (the
# version pinned in cmake/current-torch-requirements.txt), installed into a virtual environment
# in the build folder; the tests that replay pelab in PyTorch use that environment's torch
# (docs/building.md). About 1.0 GB of downloads and 2.1 GB on disk, once.
CURRENT_TORCH_BUILD ?= build-current-torch
CURRENT_TORCH_VENV := $(CURRENT_TORCH_BUILD)/venv
CURRENT_TORCH_REQUIREMENTS := cmake/current-torch-requirements.txt
CURRENT_TORCH_CTEST_ARGS ?=
$(CURRENT_TORCH_VENV)/installed: $(CURRENT_TORCH_REQUIREMENTS)
	rm -rf $(CURRENT_TORCH_VENV)
	/usr/bin/python3 -m venv $(CURRENT_TORCH_VENV)
	$(CURRENT_TORCH_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps \
	  -r $(CURRENT_TORCH_REQUIREMENTS)
	touch $@
build-current-torch: deps $(CURRENT_TORCH_VENV)/installed
	torch=$$($(CURRENT_TORCH_VENV)/bin/python -c 'import os, torch; print(os.path.dirname(torch.__file__))'); \
	if [ ! -f $(CURRENT_TORCH_BUILD)/CMakeCache.txt ]; then \
	  cmake -S . -B $(CURRENT_TORCH_BUILD) -DCMAKE_BUILD_TYPE=Release \
	        -DCMAKE_CXX_COMPILER=$(CXX_COMPILER) \
	        "-DCMAKE_PREFIX_PATH=$$torch/share/cmake;$$torch" \
	        -DPELAB_TEST_PYTHON=$(abspath $(CURRENT_TORCH_VENV))/bin/python; \
	else cmake $(CURRENT_TORCH_BUILD); fi
	cmake --build $(CURRENT_TORCH_BUILD) -j$(JOBS)
test-current-torch: build-current-torch
	ctest --test-dir $(CURRENT_TORCH_BUILD) --output-on-failure -j$(JOBS) $(CURRENT_TORCH_CTEST_ARGS)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(CURRENT_TORCH_BUILD)

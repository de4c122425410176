# mnemo -- build and test from a clean machine.  `make test` is what CI runs (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# A real build or none: fail when the NASM kernels cannot be built (see setup.py).
export MNEMO_REQUIRE_ASM ?= 1
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SOURCES := pyproject.toml setup.py $(wildcard mnemo/*.py mnemo/*/*.py mnemo/*.pyi asm/*.asm asm/*.c asm/*.h)

.PHONY: test install typecheck pytest bench demo fuzz nasm clean

test: install typecheck pytest

install: $(VENV)/.installed

# nasm is a system package (pip cannot provide it): install it when it is missing.
nasm:
	@command -v nasm >/dev/null || { echo "installing nasm with apt-get"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nasm >/dev/null; }
	@nasm -v

$(VENV)/.installed: $(SOURCES) | nasm
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# setuptools copies build/lib into every wheel: a module renamed or deleted since the last
	@# build would linger in the installed package, so start that folder afresh (the C cache stays)
	rm -rf build/lib.*
	$(BIN)/python -m pip install -q '.[test]'
	touch $@ $(VENV)/.installed-runtime

typecheck: install
	$(BIN)/mypy

# The suite on every CPU (PYTEST_WORKERS=0: in this process alone); worksteal, because a few tests
# take a minute and most a fraction of a second.
PYTEST_WORKERS ?= auto
pytest: install
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal

# Fuzz the loaders and the API for FUZZ_SECONDS (docs/fuzzing.md); reproducers go to FUZZ_OUT/,
# and the target fails when anything was found.  FUZZ_SEED replays a run's random choices;
# FUZZ_TARGETS (e.g. "shard_dir stack url") fuzzes only those surfaces.  The end of the run prints
# the cases per surface.
FUZZ_SECONDS ?= 600
FUZZ_OUT     ?= fuzz-findings
FUZZ_SEED    ?=
FUZZ_TARGETS ?=
fuzz: install
	$(BIN)/python tests/fuzz/fuzzer.py --seconds $(FUZZ_SECONDS) --out $(FUZZ_OUT) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) $(if $(FUZZ_TARGETS),--targets $(FUZZ_TARGETS))

bench: install
	$(BIN)/pytest bench/pytest -p no:randomly --benchmark-columns=min,median,mean,rounds --benchmark-sort=name


# The demo needs mnemo and its runtime dependencies only, not the test extras (mypy, pytest,
# pyarrow, the peers: ~435 MB): its own stamp.  A test install includes it and touches it too.
$(VENV)/.installed-runtime: $(SOURCES) | nasm
	@echo "building mnemo (nasm + mypyc), about a minute..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@rm -rf build/lib.*
	@$(BIN)/python -m pip install -q .
	@touch $@

# The main job in one command: set-up, then train/tokenize/show/compare/pretrain on Python's stdlib.
demo: $(VENV)/.installed-runtime
	$(BIN)/mnemo demo --out mnemo-demo

clean:
	rm -rf build dist *.egg-info $(VENV) .mypy_cache .pytest_cache .benchmarks mnemo/*.so *.so mnemo-demo

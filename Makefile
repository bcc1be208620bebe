# The first two commands of the README: `make run` and `make test` do all set-up themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

# The main job: the best topology and verified allreduce schedule for the NSDI 2025 paper's
# cluster. NODE_BANDWIDTH is the paper's fair-comparison convention (each node's egress split
# over its links), so the figures compare with the paper's (README: 281.5 us at 1024 nodes of
# degree 4); without --node-bandwidth, find assumes the one default cluster, 100Gbps per link.
NODES          ?= 1024
DEGREE         ?= 4
NODE_BANDWIDTH ?= 100Gbps
ALPHA          ?= 10us
SIZE           ?= 1MiB
OUT            ?= out

.PHONY: run test test-quick bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/pip install --quiet -e '.[plot]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/activate
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/topocoll find --nodes $(NODES) --degree $(DEGREE) --node-bandwidth $(NODE_BANDWIDTH) \
		--alpha $(ALPHA) --size $(SIZE) -o $(OUT) --compress
	@echo "topocoll is in $(BIN); to type plain 'topocoll' in this shell, run:" >&2
	@echo "    source $(BIN)/activate     # or: export PATH=\"$(abspath $(BIN)):\$$PATH\"" >&2

# Test workers (pytest-xdist): two, as CI has two cores; much of the suite waits (on ranks,
# timeouts, emulated links) rather than computes. TEST_WORKERS=0 runs it in this one process.
TEST_WORKERS ?= 2
WORKERS      := -n $(TEST_WORKERS) --dist loadgroup

# The whole suite (what CI runs).
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q $(WORKERS)

# A first look: the suite without the tests marked slow (pyproject.toml, tests/conftest.py).
test-quick: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q $(WORKERS) -m "not slow"

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/activate
	$(BIN)/pip install --quiet -e '.[plot,torch,emulate]'
	touch $@

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/startup.py
	$(BIN)/python benchmarks/construction.py
	$(BIN)/python benchmarks/bfb_scale.py
	$(BIN)/python benchmarks/finder.py
	$(BIN)/python benchmarks/train_sim.py
	$(BIN)/python benchmarks/ten_synthesis.py
	$(BIN)/python benchmarks/trees.py
	$(BIN)/python benchmarks/algorithms.py
	$(BIN)/python benchmarks/alltoall.py
	$(BIN)/python benchmarks/gossip.py
	$(BIN)/python benchmarks/hostile_inputs.py
	$(BIN)/python benchmarks/runtime.py
	$(BIN)/python benchmarks/emulate.py   # needs root or user namespaces: about 40 minutes

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .hypothesis

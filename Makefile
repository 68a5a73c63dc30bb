# `make run` and `make test` set everything up on a fresh machine (Python >= 3.11 and a C compiler).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run lint test bench bench-peers-env bench-sampler bench-marginal clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the package metadata changes (the package itself is installed editable).
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --upgrade pip >/dev/null
	$(PY) -m pip install -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) examples/quickstart.py

lint: $(STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

test: $(STAMP) lint
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -n 2 --dist loadfile --durations=25 tests

bench: $(STAMP)
	$(PY) benchmarks/run.py

# The sampler suite's peers (PyMC 6, pytensor, nutpie) need Python >= 3.12: their own venv, made
# with pyenv's 3.12, holding dimgraph too so the suite can run whole there. The project keeps 3.11.
PEERS := .venv-peers
PEERS_PY := $(PEERS)/bin/python
PY312 ?= $(shell p="$$(pyenv root 2>/dev/null)/versions/3.12.1/bin/python"; [ -x "$$p" ] && echo "$$p" || command -v python3.12)

$(PEERS)/.installed-stamp: pyproject.toml
	@[ -n "$(PY312)" ] || { echo "bench-peers-env: needs Python 3.12 (pyenv's 3.12.1 or python3.12 on PATH)"; exit 1; }
	$(PY312) -m venv $(PEERS)
	$(PEERS_PY) -m pip install --upgrade pip >/dev/null
	$(PEERS_PY) -m pip install 'pymc>=6,<7' pytensor nutpie numba jax jaxlib scipy
	# pymc-extras (benchmarks/marginal.py) pins pymc<6.4, whose LKJ normalizer is not 6.4's (the sampler suite's
	# lkj rows check PyMC against hand NumPy); its marginalize runs on 6.4, so 6.4 goes back in after it
	$(PEERS_PY) -m pip install pymc-extras
	$(PEERS_PY) -m pip install 'pymc>=6.4,<7'
	$(PEERS_PY) -m pip install -e '.[jax]'
	touch $@

bench-peers-env: $(PEERS)/.installed-stamp

bench-sampler: $(PEERS)/.installed-stamp
	$(PEERS_PY) benchmarks/sampler.py

bench-marginal: $(PEERS)/.installed-stamp
	$(PEERS_PY) benchmarks/marginal.py

clean:
	rm -rf $(VENV) $(PEERS) build *.egg-info

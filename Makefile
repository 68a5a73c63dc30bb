# `make run` and `make test` set everything up on a fresh machine (Python >= 3.11 and a C compiler).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the package metadata changes (the package itself is installed editable).
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --upgrade pip >/dev/null
	$(PY) -m pip install -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) examples/quickstart.py

test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -n 2 --dist loadfile tests

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info

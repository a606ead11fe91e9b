# fxscope developer entry points. `make test` and `make demo` set everything up from nothing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup test demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	cd examples && ../$(VENV)/bin/fxscope check . --format text; test $$? -le 1

bench: $(STAMP)
	$(PY) benchmarks/trace_overhead.py
	$(PY) benchmarks/check_scaling.py

clean:
	rm -rf $(VENV) .pytest_cache examples/.fxscope_cache

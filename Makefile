# fxscope developer entry points. `make test` and `make demo` set everything up from nothing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup test demo bench clean vscode vscode-test vscode-package vscode-e2e

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

# The VS Code extension and the graph renderer (Node 18+ and npm; `npm ci` from the lockfile).
VSCODE := clients/vscode
NPM ?= npm

$(VSCODE)/node_modules/.package-lock.json: $(VSCODE)/package-lock.json
	cd $(VSCODE) && $(NPM) ci --no-audit --no-fund

vscode: $(VSCODE)/node_modules/.package-lock.json
	cd $(VSCODE) && $(NPM) run compile

vscode-test: vscode
	cd $(VSCODE) && $(NPM) run lint && $(NPM) test

vscode-package: vscode
	cd $(VSCODE) && $(NPM) run package
	@echo "built $(VSCODE)/dist/fxscope.vsix"

# Needs code-server and Chromium: clients/vscode/scripts/install-e2e-deps.sh installs them.
vscode-e2e: vscode-package $(STAMP)
	$(PY) -m pytest -q tests/editors/test_vscode_e2e.py

clean:
	rm -rf $(VENV) .pytest_cache examples/.fxscope_cache

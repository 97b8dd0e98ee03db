# pgrecall: `make run` indexes a notes folder on the embedded database, `make test` runs the tests.
VENV ?= .venv
PYTHON ?= python3
NOTES ?= examples/notes
# The CPU build of torch, installed before the project: a plain `torch`
# requirement would pull a multi-GB CUDA build. Elsewhere, add pip options
# (for example PyTorch's CPU wheel index) through TORCH_PIP_ARGS.
TORCH ?= torch==2.13.0
TORCH_PIP_ARGS ?=
PY := $(VENV)/bin/python
# Claude Code's CLI, which tests/system/test_claude_code_plugin.py installs from npm's cache
# (`npm install --offline`) into a temporary folder: the `claude-code` target fills the cache.
CLAUDE_CODE ?= @anthropic-ai/claude-code@2.1.337

.PHONY: install browser claude-code lint run test test-fast test-integration test-system bench clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH_PIP_ARGS) "$(TORCH)"
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

# What the browser tests (tests/system/test_web_browser.py) drive: Debian's chromium (by apt-get,
# when root and it is missing) through Playwright for Python (the `browser` extra, by pip into the
# venv), never a browser `playwright install` downloads. Checked on every run, in milliseconds when
# both are there; without either the tests skip and say why.
browser: install
	@if ! command -v chromium >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		timeout 600 sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null' \
			|| echo "make: chromium unavailable; the browser tests will be skipped" >&2; \
	fi
	@if ! $(PY) -c "import playwright" >/dev/null 2>&1; then \
		timeout 300 $(PY) -m pip install --quiet "playwright>=1.45" \
			|| echo "make: playwright unavailable; the browser tests will be skipped" >&2; \
	fi

# Claude Code's CLI in npm's cache (the package and this platform's binary), installed once into a
# folder that is then deleted; without npm or the registry the plugin tests skip and say why.
claude-code:
	@if command -v npm >/dev/null 2>&1; then \
		platform="$$(node -p 'process.platform + "-" + process.arch' 2>/dev/null)"; \
		cached="$$(npm cache ls "$(CLAUDE_CODE)" "$(subst claude-code@,claude-code-$$platform@,$(CLAUDE_CODE))" 2>/dev/null | grep -c '\.tgz$$')"; \
		if [ "$$cached" -lt 2 ]; then \
			folder="$$(mktemp -d)"; \
			timeout 600 npm install --no-save --no-audit --no-fund --prefix "$$folder" "$(CLAUDE_CODE)" >/dev/null 2>&1 \
				|| echo "make: $(CLAUDE_CODE) unavailable; the Claude Code plugin tests will be skipped" >&2; \
			rm -rf "$$folder"; \
		fi; \
	fi

run: install
	$(VENV)/bin/pgrecall index "$(NOTES)"
	@echo
	@echo "Indexed $(NOTES). Search it with:"
	@echo "  $(VENV)/bin/pgrecall search \"how are results ranked\""
	@echo "  $(VENV)/bin/pgrecall search E-4711 --json"

test: install browser claude-code lint
	$(PY) -m pytest

# The linter and the formatter, as the tests' extra installs them: a lint error fails make test.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The unit tier (no database, no model, no process) but its few slow tests; seconds.
test-fast: install
	$(PY) -m pytest tests/unit -m "not slow"

test-integration: install
	$(PY) -m pytest tests/integration

test-system: install browser claude-code
	$(PY) -m pytest tests/system

# A small default suite; `python -m bench list` names the others (docs/benchmarks.md).
BENCH_SUITE ?= quick
BENCH_ARGS ?=
bench: install
	$(PY) -m bench run $(BENCH_SUITE) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache

# Tapescope: `make run` installs everything and serves http://127.0.0.1:5000; `make test` installs and runs every test.
PY      := .venv/bin/python
PIP     := .venv/bin/pip
VENDOR  := static/vendor

.PHONY: run test install system-deps python-deps torch-deps frontend-deps schemas bench clean

run: install
	$(PY) app.py

test: install torch-deps
	$(PY) -m pytest -q -n auto --dist loadgroup --durations=15

install: system-deps python-deps frontend-deps

# Debian's chromium-headless-shell drives the browser tests (tests/conftest.py's CHROMIUM; Playwright never downloads a
# browser here); Debian's postgresql gives the suite a throwaway cluster per test process (tests/postgres.py; its
# service is not started, nor needed).
system-deps:
	@{ command -v chromium-headless-shell >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium-headless-shell postgresql; }

python-deps: .venv/.installed
.venv/.installed: requirements.txt
	python3 -m venv .venv
	$(PIP) install -q -r requirements.txt
	touch $@

# PyTorch (CPU) for the importer's tests: optional, so a machine where pip cannot get it still builds and tests
# (tests/importers and the import browser test then skip, saying why). Stamped only when it installed.
torch-deps: .venv/.torch-installed
.venv/.torch-installed: requirements-torch.txt .venv/.installed
	@if $(PIP) install -q --timeout 30 --retries 1 -r requirements-torch.txt; then touch $@; \
	else echo "torch could not be installed: the torch importer's tests will skip (pip install -r requirements-torch.txt)"; fi

# D3, dagre and Plotly's cartesian bundle (every trace type the page draws: scatter, bar, heatmap; 1.5 MB against the
# full bundle's 4.8 MB, which a page parses on every first visit) from the npm registry: copied to static/vendor, no CDN.
# axe-core, a devDependency, stays in node_modules: tests/e2e/test_accessibility.py reads it there (never served).
frontend-deps: $(VENDOR)/.installed
$(VENDOR)/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	mkdir -p $(VENDOR)
	cp node_modules/d3/dist/d3.min.js $(VENDOR)/d3.min.js
	cp node_modules/@dagrejs/dagre/dist/dagre.min.js $(VENDOR)/dagre.min.js
	cp node_modules/plotly.js-cartesian-dist-min/plotly-cartesian.min.js $(VENDOR)/plotly.min.js
	touch $@

# Both trace schemas and the page's column list, generated from backend/trace/declaration.py (docs/trace.md);
# tests/trace/test_declaration.py fails while a committed copy differs from what the declaration makes.
schemas: python-deps
	$(PY) -m backend.trace.schemas

bench: install
	$(PY) bench/engine.py
	$(PY) bench/trace.py

clean:
	rm -rf .venv node_modules $(VENDOR)

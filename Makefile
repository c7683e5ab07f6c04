# One command each, for a fresh machine:
#   make demo   -- set everything up and run the main job
#   make test   -- set everything up and run the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: demo test setup system-deps bench conformance clean

system-deps:
	@if ! command -v dot >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 || ! command -v mpiexec >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq graphviz chromium chromium-driver libopenmpi-dev openmpi-bin >/dev/null ) \
	      || echo "warning: could not install graphviz/chromium/chromium-driver/openmpi; tests that need them will be skipped"; \
	  else echo "install Graphviz, Chromium, ChromeDriver and Open MPI (mpiexec) with your package manager"; fi; \
	fi

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e ".[test,numba]"
	touch $(STAMP)

setup: system-deps $(STAMP)

demo: setup
	$(VENV)/bin/dyngrad demo

test: setup
	DYNGRAD_ORACLE=required $(PY) -m pytest

conformance: setup
	$(PY) ../shared/conformance/run.py --lib dyngrad

bench: setup
	$(VENV)/bin/dyngrad bench

clean:
	rm -rf $(VENV) build dist src/*.egg-info demo-output .pytest_cache

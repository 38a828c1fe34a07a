# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint test-machine test-days client-dist

# the Python client (clients/python) is its own distribution; the server's tests install it
$(BIN)/findata: pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]' -e './clients/python[all]'
	touch $(BIN)/findata

# the project's own modules, byte-compiled: an editable install leaves that to their first
# import, which never writes it where PYTHONDONTWRITEBYTECODE is set (as on this project's
# machines), so every process compiled them again (~0.3 s of CPU of importing the definitions
# and the CLI, 3.5-4.0 s against 3.8-4.1 s). A
# wheel's install compiles its modules so; a module edited since is compiled again here
SOURCES := findata accounts api contracts orchestration sources demo webhooks transforms clients/python/findata_client

install: $(BIN)/findata
	$(BIN)/python -m compileall -q $(SOURCES)

# findata-python's wheel and sdist (the wheel built from the sdist), with the venv's setuptools
# (--no-isolation: nothing downloaded); until the package is published, pip installs it from
# them: pip install --find-links clients/python/dist 'findata-python[all]'
CLIENT_DIST ?= clients/python/dist

client-dist: $(BIN)/findata
	rm -f $(CLIENT_DIST)/findata_python-*
	$(BIN)/python -m build --quiet --no-isolation --outdir $(CLIENT_DIST) clients/python

demo: install
	$(BIN)/findata demo --no-serve

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Debian packages and servers the tests drive (installed as root, else named): tests/machine.sh
test-machine:
	tests/machine.sh

# Both cores (this project's machines have two): each test module runs whole on one worker, so
# its module fixtures are built once; the session's demo builds are shared by the workers
# (tests/shared_builds.py). TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2

test: lint test-machine
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

# The demo-building tests on a dozen calendar-edge days, each run under faketime (Debian's
# package), which sets the day every process of the run sees: nothing may depend on the day.
# libfaketime 0.9.10 never returns from a timed threading wait (threading.Event().wait(0.2)
# hangs), so the webhook worker's tests cannot run under it; for the whole suite on one day use
# datefudge (Debian), which moves only the wall clock: `datefudge 2026-11-24 make test`.
TEST_DAYS ?= 2026-01-02 2026-02-17 2026-03-09 2026-04-06 2026-05-26 2026-07-06 2026-09-08 \
	2026-11-24 2026-11-27 2026-12-31 2027-01-01 2028-02-29
DAY_TESTS ?= tests/orchestration tests/sources tests/demo tests/published tests/transforms tests/api

test-days: install test-machine
	@failed=""; for day in $(TEST_DAYS); do \
		echo "== $$day"; \
		faketime "$$day" $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile -p no:cacheprovider \
			$(DAY_TESTS) || failed="$$failed $$day"; \
	done; \
	if [ -n "$$failed" ]; then echo "failed on:$$failed"; exit 1; fi

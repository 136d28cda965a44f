# deid-eval: `make demo` sets everything up and serves the site; `make test` runs the tests.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip<26"
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Build the demo campaign from ../shared/data (or $$DEID_DATA_DIR), generate the baseline
# submissions, run the automated evaluation, write the reports to var/reports/, create an
# organizer login, then serve on 127.0.0.1:8000 (NO_SERVE=1: stop before serving).
demo: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo
	@if [ -z "$(NO_SERVE)" ]; then $(PY) manage.py runserver 127.0.0.1:8000; fi

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) var

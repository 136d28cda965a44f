# deid-eval: `make demo` sets everything up and serves the site; `make test` runs the tests.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# InsightFace without its dependencies: it names opencv-python, which would sit beside the
# opencv-contrib-python that mediapipe needs (two distributions of cv2); what it imports
# (onnx, onnxruntime, scikit-image, scipy, requests, tqdm) is in pyproject.toml.
INSIGHTFACE := insightface==2.1
# Where the site keeps its state (as settings.py: $$DEID_VAR_DIR, default var/).
VAR_DIR := $(if $(DEID_VAR_DIR),$(DEID_VAR_DIR),var)
# The demo's address: loopback only (0.0.0.0:8000 would expose it to the network).
DEMO_ADDRESS ?= 127.0.0.1:8000
# make serve / make worker read this file if it exists (docs/campaign.md).
ENV_FILE ?= .env
# Python writes each module's bytecode (__pycache__, ignored by git) even where the machine's
# environment says not to (PYTHONDONTWRITEBYTECODE=1 here): otherwise every process the
# demo, the servers and the tests start compiles ~180 of our modules again (0.4-0.7 CPU s).
unexport PYTHONDONTWRITEBYTECODE
HONCHO := PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/honcho -e $(ENV_FILE)

.PHONY: demo serve worker lint docs test bench install clean secret-key

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip<26"
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet --no-deps "$(INSIGHTFACE)"
	touch $(STAMP)

install: $(STAMP)

# A random secret key in $(VAR_DIR)/secret_key (kept once made), read by settings.py when
# DEID_SECRET_KEY is unset: the demo and benchmarks then need no configuration.
secret-key: $(STAMP)
	@$(PY) -m evalsite.secret_key $(VAR_DIR)/secret_key

# Build the demo campaign from ../shared/data (or $$DEID_DATA_DIR), serve it on
# http://$(DEMO_ADDRESS)/ with gunicorn (DEBUG off, static files by WhiteNoise) as soon as it
# is imported, generate the baseline submissions, run the automated evaluation behind it
# (the pages fill in), write the reports to var/reports/, print the logins, and keep
# serving until Ctrl-C. NO_SERVE=1: no server, exit when done; DEMO_ARGS="--method
# identity --method blur_face": a quicker demo with fewer baselines.
demo: secret-key
	DEID_DEBUG=0 $(PY) manage.py migrate --noinput
	@if [ -n "$(NO_SERVE)" ]; then \
	  DEID_DEBUG=0 $(PY) manage.py demo --url http://$(DEMO_ADDRESS)/ $(DEMO_ARGS); \
	else \
	  DEID_DEBUG=0 DEID_WEB_WORKERS=$${DEID_WEB_WORKERS:-2} $(PY) manage.py demo --serve $(DEMO_ADDRESS) $(DEMO_ARGS); \
	fi

# Production: migrate, collect static files, then run the Procfile (gunicorn + a Celery
# worker) with the environment of $(ENV_FILE). docs/campaign.md.
serve: $(STAMP)
	$(HONCHO) run python manage.py migrate --noinput
	$(HONCHO) run python manage.py collectstatic --noinput --verbosity 0
	$(HONCHO) start

# Only a Celery worker (another machine: same broker, database and media storage).
worker: $(STAMP)
	$(HONCHO) start worker

# Lint and format check (ruff), the import contracts (pyproject.toml: the science cores
# import no Django, Celery, DRF, evalsite or trials; the catalogue imports no app; the apps
# are independent; nothing imports the portal) and no private name imported from another
# module (evalsite/checks/private_imports.py).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) -m evalsite.checks.private_imports

# The documentation site (docs/, mkdocs.yml) into site/; --strict: a warning (broken link,
# page missing from the navigation, docstring mkdocstrings cannot read) fails the build.
# Not --quiet: it hides the warnings from --strict too (a broken link then built green).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The tests run in parallel (pytest-xdist; TEST_WORKERS=0: one process). One worker more
# than the cores: browser, Celery and server tests wait (clips played in real time, a
# killed worker's redelivery), and the extra worker fills the core they leave idle (2 cores,
# idle, same code: 853 s with 3 workers, 186 % CPU; 906 s with 2, 176 %). --dist loadfile
# keeps each test file on one worker so its module fixtures are built once;
# tests/conftest.py hands out the slowest files first.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: lint docs
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30

bench: secret-key
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) var site

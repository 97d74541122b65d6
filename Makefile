# k3lab — the study's commands. `make setup` is idempotent; every other target depends on it.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SGL_VENV := .venv-sglang
SGL_PY := $(SGL_VENV)/bin/python
PROFILE ?= offline
STAMP := $(VENV)/.k3lab-setup
AITER_REQ := requirements/amd-aiter.txt
AITER_VERSION := $(shell sed -n 's/^amd-aiter==//p' $(AITER_REQ))
SGL_STAMP := $(SGL_VENV)/.k3lab-setup
NBVAL_RESULTS := $(abspath build/nbval-results)
REPORT ?= results/report.html
SHOTS ?= build/report-screenshots

.PHONY: test-lane1 test-lane2 browser serving-fit record-predictions setup sglang-env sglang-releases release-matrix test-release-matrix reproduce test test-deep test-unit test-sglang test-notebooks lab notebooks readme-table screenshots clean

setup: $(STAMP)

$(STAMP): pyproject.toml patches/pyproject.toml $(AITER_REQ)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# the patches an operator installs (patches/, not on PyPI) first, so that the study's dependency
	# on it is met; --no-deps: the study's own pin brings torch next
	$(PY) -m pip install -q --no-deps -e ./patches
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m ipykernel install --sys-prefix --name k3lab --display-name "k3lab (.venv)" >/dev/null
	# AMD AITER's release, never imported (it needs ROCm): k3lab.aiter_release reads its files
	$(PY) -m pip install -q --no-deps --no-compile --upgrade --target $(VENV)/amd-aiter-$(AITER_VERSION) -r $(AITER_REQ)
	touch $@

# The compatibility environment: a real, pinned sglang imported on CPU (see requirements/).
sglang-env: $(SGL_STAMP)

$(SGL_STAMP): requirements/sglang-0.5.16.txt requirements/sglang-0.5.23.txt pyproject.toml patches/pyproject.toml
	test -x $(SGL_PY) || $(PYTHON) -m venv $(SGL_VENV)
	$(SGL_PY) -m pip install -q -r requirements/sglang-0.5.16.txt
	$(SGL_PY) -m pip install -q --no-deps sglang==0.5.16
	# as an operator installs k3lab-patches into an sglang image (--no-deps: sglang's torch stays);
	# its sglang plugin entry point is what spawned scheduler processes load
	$(SGL_PY) -m pip install -q --no-deps -e ./patches
	$(SGL_PY) -m pip install -q --no-deps -e .
	# sglang 0.5.23 beside it (not on sys.path): read by child processes only (see the file)
	$(SGL_PY) -m pip install -q --no-deps --upgrade --target $(SGL_VENV)/sglang-0.5.23 -r requirements/sglang-0.5.23.txt
	touch $@

# Every sglang release of requirements/sglang-releases.txt beside .venv-sglang (~2.5 min, 1.3 GB);
# not part of `make test` (the sglang tier regenerates 0.5.16 and 0.5.23, which sglang-env installs).
sglang-releases: sglang-env
	for v in $$(sed -n 's/^sglang==\([^ ]*\).*/\1/p' requirements/sglang-releases.txt); do \
	  test -d $(SGL_VENV)/releases/sglang-$$v/sglang || \
	  $(SGL_PY) -m pip install -q --no-deps --target $(SGL_VENV)/releases/sglang-$$v sglang==$$v || exit 1; \
	done

# Re-measure the whole release matrix into data/measured/ (~15-20 min on 2 cores) ...
release-matrix: sglang-releases
	$(SGL_PY) benchmarks/sglang_release_matrix.py

# ... or check every installed release against the committed matrix without rewriting it.
test-release-matrix: sglang-releases
	K3LAB_RELEASE_MATRIX=all $(SGL_PY) -m pytest -q -m sglang tests/sglang/test_release_matrix.py -p no:cacheprovider

# Refit the serving model on data/public_measurements.yaml → data/serving_fit.yaml (~1 min).
serving-fit: setup
	$(PY) benchmarks/serving_fit.py

# Record the serving model's predictions for deployments no public run measured (data/predictions/,
# a new dated file; a recording is never rewritten). `python -m k3lab score` scores them.
record-predictions: setup
	$(PY) benchmarks/record_predictions.py

reproduce: setup
	$(PY) -m k3lab reproduce --profile $(PROFILE)

# The README's test command: two lanes side by side, one core each (the 2-core box), balanced so
# that both take about as long (a fresh clone: ~10 min each; `--durations` put the whole-study runs
# of tests/test_reproduce.py and tests/test_profiles.py at ~5 of the unit tier's 15 min, the sglang
# tier at ~5): lane 1 the unit and property tests without those two files, then nbval over the
# committed notebooks; lane 2 the sglang tier (in .venv-sglang), then those two files. Every test
# of test-unit and test-sglang runs once; each lane's output is printed whole when it ends
# (TEST_JOBS=1: one after the other). The README freshness check is in lane 1.
TEST_JOBS ?= 2
#: the unit tests that run in lane 2, after the sglang tier
LANE2_TESTS := tests/test_reproduce.py tests/test_profiles.py
test: setup sglang-env
	@echo "make test: two lanes side by side (TEST_JOBS=$(TEST_JOBS)): unit+nbval | sglang tier+whole-study runs; each prints when it ends"
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target test-lane1 test-lane2

test-lane1: setup
	$(PY) -m pytest -q -m "not sglang" tests $(addprefix --ignore=,$(LANE2_TESTS))
	@$(MAKE) --no-print-directory test-notebooks

test-lane2: setup sglang-env
	$(SGL_PY) -m pytest -q -m sglang tests/sglang -p no:cacheprovider
	$(PY) -m pytest -q -m "not sglang" $(LANE2_TESTS) -p no:cacheprovider

test-unit: setup
	$(PY) -m pytest -q -m "not sglang" tests

# The property tests at ten times their CI example count, drawn afresh each run (make test draws
# the same CI-sized set every time: tests/conftest.py's hypothesis profiles). Not part of `make test`.
test-deep: setup
	K3LAB_HYPOTHESIS=deep $(PY) -m pytest -q -m "not sglang" tests/test_sampling.py

test-sglang: sglang-env
	$(SGL_PY) -m pytest -q -m sglang tests/sglang -p no:cacheprovider

test-notebooks: setup
	rm -rf $(NBVAL_RESULTS)
	K3LAB_RESULTS=$(NBVAL_RESULTS) $(PY) -m pytest -q --nbval notebooks \
	  --nbval-kernel-name k3lab --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

# Re-execute the committed notebooks in place (default parameters) to refresh their outputs.
notebooks: setup
	$(PY) -m k3lab.refresh notebooks/[0-9][0-9]_*.ipynb

# As root (the usual case on a GPU box) JupyterLab needs --allow-root.
lab: setup
	$(VENV)/bin/jupyter lab notebooks $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# The browser `make screenshots` drives: Debian's `chromium`, installed with apt-get when missing (as
# root, the usual case on a fresh box or in a container); CHROMIUM=/path/to/it uses another.
browser:
	@if [ -n "$${CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else echo "make browser: install Debian's chromium (sudo apt-get install -y chromium) or set CHROMIUM=/path/to/it" >&2; exit 2; fi

# Look at the report in a real browser before committing a report change: rebuilds $(REPORT) from
# the run beside it (no notebook re-runs), then headless Chromium shoots it at 1280 px, one capture
# per slice, into $(SHOTS)/closed-NN.png (as a reader first sees it) and open-NN.png (sections open);
# a blank slice fails. REPORT=results/runs/NAME/report.html for a what-if run. Not part of `make test`.
screenshots: setup browser
	@test -f $(REPORT) || { echo "make screenshots: $(REPORT) not found; run \`make reproduce\` first" >&2; exit 2; }
	$(PY) -m k3lab.report --results $(dir $(REPORT))
	$(PY) -m k3lab.report_screenshots $(REPORT) --out $(SHOTS)

# The README's bottom line and docs/findings.md's table, from results/claims.csv (after `make reproduce`).
readme-table: setup
	$(PY) -m k3lab.report --readme README.md --readme docs/findings.md

clean:
	rm -rf results/[0-9][0-9]_* results/claims.csv results/report.html build

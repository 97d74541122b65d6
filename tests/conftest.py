"""Shared test fixtures. Every test writes its results into a temporary folder."""

import os
import shutil

import pytest
from hypothesis import settings

from k3lab import data, paths

#: the property tests' profiles: "ci" (``make test``) draws the same examples every run — no
#: random seed, no example database — at each test's own count; "deep" (``make test-deep``)
#: draws afresh, ten times as many (tests/test_sampling.py's ``examples``)
HYPOTHESIS_PROFILE = os.environ.get("K3LAB_HYPOTHESIS", "ci")
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("deep", derandomize=False, database=None, deadline=None, print_blob=True)
settings.load_profile(HYPOTHESIS_PROFILE)


@pytest.fixture(autouse=True)
def _isolated_results(tmp_path, monkeypatch):
    """Point K3LAB_RESULTS at a per-test folder so no test touches results/."""
    monkeypatch.setenv("K3LAB_RESULTS", str(tmp_path / "results"))
    yield


@pytest.fixture(scope="session")
def baseline(tmp_path_factory):
    """One complete study run of the fixture notebooks, made once per session (never written
    to: tests copy it as 'the previous results', tests/study_helpers.py)."""
    from study_helpers import complete_run

    return complete_run(tmp_path_factory.mktemp("baseline"))


@pytest.fixture
def previous(baseline):
    """results/ holding the baseline's complete run; returns its snapshot."""
    from k3lab.paths import results_root
    from study_helpers import snapshot

    shutil.copytree(baseline, results_root())
    return snapshot(results_root())


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory):
    """One ``reproduce --profile ci`` of the real study (``PROFILE=ci make reproduce``, the
    README's smoke run), made once per session → its results folder."""
    from k3lab import pipeline
    from study_helpers import results_at

    root = tmp_path_factory.mktemp("ci_run")
    with results_at(root):
        pipeline.run("ci")
    return root


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A private copy of data/ that the loader reads (K3LAB_DATA), caches cleared around it."""
    d = tmp_path / "data"
    shutil.copytree(paths.DATA_DIR, d)
    monkeypatch.setenv("K3LAB_DATA", str(d))
    data.clear_cache()
    yield d
    data.clear_cache()

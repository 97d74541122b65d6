"""Shared test fixtures. Every test writes its results into a temporary folder."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_results(tmp_path, monkeypatch):
    """Point K3LAB_RESULTS at a per-test folder so no test touches results/."""
    monkeypatch.setenv("K3LAB_RESULTS", str(tmp_path / "results"))
    yield

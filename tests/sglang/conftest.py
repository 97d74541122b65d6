"""Tier of tests that run against a real, pinned sglang (in .venv-sglang, `make test-sglang`).

In the main environment sglang is not installed: these modules are not even collected
there (``-m "not sglang"`` alone would still import them). In .venv-sglang they all run;
if sglang failed to install there, `make test-sglang` collects nothing and fails.
"""

import importlib.util

import pytest

if importlib.util.find_spec("sglang") is None:
    collect_ignore_glob = ["test_*.py"]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/tests/sglang/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.sglang)

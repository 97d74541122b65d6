"""``data/sglang_serving_rules.yaml`` against the real releases: every rule's ``holds`` for
0.5.16 (this environment's site-packages) and 0.5.23 (its folder first on ``PYTHONPATH``),
as :mod:`k3lab.probes.serving_rules` finds it in the release's own code. T14 (DSpark and
pipeline parallelism), P7 (split prefill/decode backends) and T19 (DCP for Kimi K3) rest on
these."""

import json
import os
import subprocess
import sys

import pytest

from k3lab import data
from k3lab.paths import REPO_ROOT
from k3lab.probes import serving_rules
from k3lab.probes.release_matrix import release_source


def _measure(version: str) -> dict:
    how, folder = release_source(version)
    if how == "missing":
        pytest.skip(f"sglang {version} is not installed here (make sglang-env)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("SGLANG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(REPO_ROOT)] if folder else [str(REPO_ROOT)])
    proc = subprocess.run([sys.executable, "-m", "k3lab.probes.serving_rules"], capture_output=True, text=True,
                          env=env, timeout=900, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["sglang"] == version, out
    return out["rules"]


@pytest.mark.parametrize("version", ["0.5.16", "0.5.23"])
def test_committed_rules_hold_in_the_release(version):
    found = _measure(version)
    doc = data.load("serving_rules")
    assert set(found) == set(doc.rules) == set(serving_rules.CHECKS)
    for name, rule in doc.rules.items():
        if version in rule.holds:
            assert found[name] == rule.holds[version], (name, rule.where)

"""Numbers in k3lab's YAML follow YAML 1.2's core schema, decimal only (attack on main:
"YAML 1.1 reads ``2_95`` as 295, ``0x10`` as 16 and ``1e3`` as a string": a price typed
``2_95`` was quoted at $295 without a word)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from k3lab import readers
from k3lab.paths import DATA_DIR, PARAMS_DIR, REPO_ROOT


@pytest.mark.parametrize("text, expected", [
    ("2_95", "2_95"), ("0x10", "0x10"), ("0o7", "0o7"), ("1:30", "1:30"), ("12:30:00", "12:30:00"),
    ("1_000.5", "1_000.5"), ("0b101", "0b101"),
    ("1e3", 1000.0), ("1.0e3", 1000.0), ("-2.5E-1", -0.25), (".5", 0.5), ("+3", 3), ("-7", -7),
    ("010", 10),  # YAML 1.1 (and PyYAML) read 8: a leading zero is still decimal
    ("2.95", 2.95), ("42", 42),
])
def test_plain_numbers_resolve_as_yaml_1_2_core_decimal(text, expected):
    value = readers.parse_yaml(f"v: {text}\n", "t.yaml")["v"]
    assert value == expected and type(value) is type(expected)


def test_infinity_and_nan_still_resolve_as_floats_for_the_schema_to_refuse():
    v = readers.parse_yaml("a: .inf\nb: -.inf\nc: .nan\n", "t.yaml")
    assert v["a"] == math.inf and v["b"] == -math.inf and math.isnan(v["c"])


def _numbers(a, b, path, out):
    """Every place where the old and the new reading differ, walking both together."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _numbers(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _numbers(x, y, f"{path}[{i}]", out)
    elif not (a == b and type(a) is type(b)) and not (isinstance(a, float) and isinstance(b, float)
                                                      and math.isnan(a) and math.isnan(b)):
        out.append((path, a, b))


COMMITTED = sorted(DATA_DIR.rglob("*.yaml")) + sorted(PARAMS_DIR.glob("*.yaml"))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_committed_yaml_file_reads_as_it_did_under_yaml_1_1(path):
    text = path.read_text(encoding="utf-8")
    old = yaml.load(text, Loader=yaml.SafeLoader)  # PyYAML's own YAML 1.1 resolver
    diffs: list = []
    _numbers(old, readers.parse_yaml(text, str(path)), path.name, diffs)
    assert diffs == []


def test_committed_files_are_all_there():
    assert len(COMMITTED) >= 20 and (DATA_DIR / "prices.yaml") in COMMITTED


@pytest.mark.parametrize("typed", ["2_95", "0x10", "1:30"])
def test_a_price_typed_in_yaml_1_1_notation_is_refused_naming_file_and_field(data_copy, typed):
    prices = data_copy / "prices.yaml"
    text = prices.read_text(encoding="utf-8")
    assert "usd_per_gpu_hour: 2.95," in text
    prices.write_text(text.replace("usd_per_gpu_hour: 2.95,", f"usd_per_gpu_hour: {typed},", 1), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "k3lab", "quote"], capture_output=True, text=True, cwd=REPO_ROOT,
                       timeout=300, env={**os.environ, "K3LAB_DATA": str(data_copy)})
    assert r.returncode != 0 and "Traceback" not in r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1, r.stderr
    assert "data/prices.yaml" in err[0] and "usd_per_gpu_hour" in err[0] and typed in err[0]
    assert "295" not in r.stdout

"""Every file under ``data/`` corrupted eleven ways (issue 23): never a traceback, never a
silent change.

For each file × corruption (garbage bytes, cut in half, empty, its first number set to inf /
nan / negative / 0 / a string, a required key deleted, a key written twice, an unknown key
added), through ``K3LAB_DATA``:

- the loader (:func:`k3lab.data.read`, plus the cross-checks for the files that take part)
  refuses it with one line that names the file — and the field, where there is one: the
  corrupted number's key, the deleted, repeated or added key — or, where the change is valid
  input, its effect is the one the schema documents (only two kinds may accept a change:
  a published model config's keys k3lab does not read, and bench_serving's extra keys —
  then what k3lab reads must be exactly as before);
- ``fit`` (in-process, the same ``k3lab.cli.main`` the command runs) either exits 2 with one
  line naming the file, or prints exactly what it printed before — for every file ``fit``
  reads (found by watching the loader during a clean ``fit``);
- ``reproduce --profile ci`` for one case per kind of file: exit 2, one line naming the file,
  nothing run, nothing written (the inputs are checked at the door).

An accepted change cannot move a result: what k3lab reads of the file (the ModelConfig, the
records' keys) is compared with the clean copy's, and so are the two things that read a
model config's raw keys (claim S1's draft-key scan, notebook 01's comparison with
aiconfigurator's copy, where a changed ``text_config`` field shows, as documented).

Files are discovered, not listed: a file added under ``data/`` must be registered in
``k3lab.data.SCHEMAS`` (or named in ``NOT_INPUTS``), and is then covered here with no edit.
The corrupted texts are built here with PyYAML / json / csv, independently of the loader.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from k3lab import cli, crosscheck, data, paths, specs
from k3lab.findings import f2_topk as f2
from k3lab.schemas.measured import OPTIONAL_KEYS, REQUIRED_KEYS, BenchServing
from k3lab.schemas.model import ModelConfigFile

REPO = Path(__file__).resolve().parents[1]
DATA = paths.DATA_DIR
FILES = sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*")
               if p.is_file() and not any(part.startswith(".") for part in p.relative_to(DATA).parts))
BY_PATH = {rel: name for name, (rel, _) in data.SCHEMAS.items()}
CORRUPTIONS = ("garbage", "truncated", "empty", "inf", "nan", "negative", "zero", "string",
               "delete_key", "duplicate_key", "unknown_key")
NUMBER_CASES = ("inf", "nan", "negative", "zero", "string")
UNKNOWN = "k3lab_unknown_key"
FIT = ["fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8"]


def kind(rel: str) -> str:
    if rel.endswith(".meta.json"):
        return "meta"
    if rel.endswith(".json"):
        return "model config" if rel.startswith("model/") else "transcript"
    return Path(rel).suffix.lstrip(".")


# --------------------------------------------------------------------------- corrupting


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?$")


def _first_number_json(text: str):
    """(start, end, key) of the first number in JSON text, and the key it belongs to."""
    key = None
    for m in _TOKEN.finditer(text):
        t = m.group()
        if t.startswith('"'):
            key = json.loads(t)
        elif _NUMBER.match(t):
            return m.start(), m.end(), key
    return None


#: libyaml's safe loader where PyYAML has it (the pure-Python one takes ~8 s to compose the
#: 1.6 MB public_measurements.yaml, once per corruption case)
FAST_YAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _first_number_yaml(text: str):
    def walk(node, key=None):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                found = walk(v, k.value)
                if found:
                    return found
        elif isinstance(node, yaml.SequenceNode):
            for v in node.value:
                found = walk(v, key)
                if found:
                    return found
        elif node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
            return node.start_mark.index, node.end_mark.index, key
        return None
    return walk(yaml.compose(text, Loader=FAST_YAML))


def _first_number_csv(text: str):
    lines = text.splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    offset = len(lines[0])
    row = next(csv.reader([lines[1]]))
    pos = 0
    for col, cell in zip(header, row):
        if _NUMBER.match(cell):
            start = offset + lines[1].index(cell, pos)
            return start, start + len(cell), col
        pos += len(cell) + 1
    return None


def _number_literal(how: str, old: str, fmt: str) -> str:
    table = {"yaml": {"inf": ".inf", "nan": ".nan", "string": '"corrupt"'},
             "json": {"inf": "Infinity", "nan": "NaN", "string": '"corrupt"'},
             "csv": {"inf": "inf", "nan": "nan", "string": "corrupt"}}[fmt]
    if how == "negative":
        return "-1" if float(old) == 0 else (old[1:] if old.startswith("-") else "-" + old)
    if how == "zero":
        return "0"
    return table[how]


def _top_key_lines(text: str, key: str) -> tuple[int, int]:
    """The lines (0-based, end exclusive) a top-level YAML key and its value span."""
    node = yaml.compose(text, Loader=FAST_YAML)
    keys = [k for k, _ in node.value]
    for i, k in enumerate(keys):
        if k.value == key:
            end = keys[i + 1].start_mark.line if i + 1 < len(keys) else len(text.splitlines())
            return k.start_mark.line, end
    raise KeyError(key)


def corrupt(rel: str, raw: bytes, how: str, required: list[str]):
    """The corrupted bytes of ``rel`` and the field the error must name (None: only the
    file) — or None when the corruption does not apply (no number in the file) or leaves
    the file as it was (a number already 0)."""
    if how == "garbage":
        return random.Random(rel).randbytes(4096), None
    if how == "truncated":
        return raw[: len(raw) // 2], None
    if how == "empty":
        return b"", None
    text = raw.decode("utf-8")
    fmt = {".yaml": "yaml", ".json": "json", ".jsonl": "json", ".csv": "csv"}.get(Path(rel).suffix)
    if fmt is None:                      # documentation: any text edit
        return (text + f"\n{how}\n").encode(), None
    first_line = text.splitlines(keepends=True)[0] if rel.endswith(".jsonl") else None
    if how in NUMBER_CASES:
        where = text if first_line is None else first_line
        found = {"yaml": _first_number_yaml, "json": _first_number_json, "csv": _first_number_csv}[fmt](where)
        if found is None:
            return None
        start, end, key = found
        new = where[:start] + _number_literal(how, where[start:end], fmt) + where[end:]
        out = new if first_line is None else new + text[len(first_line):]
        return (out.encode(), key) if out != text else None
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        if how == "delete_key":
            rows, field = [r[1:] for r in rows], rows[0][0]
        elif how == "duplicate_key":
            rows, field = [r + [r[0]] for r in rows], rows[0][0]
        else:
            rows, field = [rows[0] + [UNKNOWN]] + [r + ["1"] for r in rows[1:]], UNKNOWN
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        return buf.getvalue().encode(), field
    if fmt == "yaml":
        doc = yaml.load(text, Loader=FAST_YAML)
        if how == "delete_key":
            key = next(k for k in doc if k in required)
            lo, hi = _top_key_lines(text, key)
            lines = text.splitlines(keepends=True)
            return "".join(lines[:lo] + lines[hi:]).encode(), key
        key = next(iter(doc)) if how == "duplicate_key" else UNKNOWN
        return (text.rstrip("\n") + f"\n{key}: null\n").encode(), key
    # JSON (a document, or the first record of a JSONL stream)
    body = text if first_line is None else first_line
    rest = "" if first_line is None else text[len(first_line):]
    obj = json.loads(body)
    if how == "duplicate_key":
        key = next(iter(obj))
        i = body.index("{") + 1
        new = body[:i] + f'"{key}": null, ' + body[i:]
        return (new + rest).encode(), key
    if how == "delete_key":
        key = next(k for k in obj if k in required)
        del obj[key]
    else:
        key = UNKNOWN
        obj[key] = 1
    new = json.dumps(obj, indent=None if first_line is not None else 2) + ("\n" if first_line is not None else "")
    return (new + rest).encode(), key


CASES = [pytest.param(rel, how, id=f"{rel}-{how}") for rel in FILES for how in CORRUPTIONS]


# --------------------------------------------------------------------------- fixtures


def _fit() -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    data.clear_cache()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(FIT)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def copy_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("corrupt") / "data"
    shutil.copytree(DATA, d)
    return d


@pytest.fixture(scope="module")
def clean(copy_dir):
    """What a clean copy gives: each file's loaded contents, fit's output, the files fit reads."""
    old = os.environ.get("K3LAB_DATA")
    os.environ["K3LAB_DATA"] = str(copy_dir)
    real_read, seen = data.read, []
    try:
        data.read = lambda name, path=None: (seen.append(name), real_read(name, path))[1]
        rc, fit_out, _ = _fit()
        data.read = real_read
        assert rc == 0
        loaded = {name: data.read(name) for name in data.SCHEMAS}
        models = {m: specs.load_model(m) for m in specs.known_models()}
        k3_differences = crosscheck.config_differences()
    finally:
        data.read = real_read
        data.clear_cache()
        if old is None:
            os.environ.pop("K3LAB_DATA", None)
        else:
            os.environ["K3LAB_DATA"] = old
    return {"fit": fit_out, "fit_reads": {data.SCHEMAS[n][0] for n in seen}, "loaded": loaded, "models": models,
            "k3_differences": k3_differences}


@pytest.fixture
def corrupted(copy_dir, monkeypatch):
    """Write a corrupted file into the copy for one test, and put it back after."""
    monkeypatch.setenv("K3LAB_DATA", str(copy_dir))
    written = []

    def write(rel: str, content: bytes):
        (copy_dir / rel).write_bytes(content)
        written.append(rel)

    yield write
    for rel in written:
        shutil.copy(DATA / rel, copy_dir / rel)
    data.clear_cache()


def _check_line(msg: str, rel: str, field: str | None) -> None:
    assert "\n" not in msg and "Traceback" not in msg, msg
    assert msg.startswith(f"data/{rel}"), f"does not start with the file: {msg}"
    if field is not None:
        assert field in msg, f"does not name {field!r}: {msg}"


def _accepted_effect(rel: str, how: str, field, clean) -> None:
    """A change the loader accepted must be one its schema documents as not reaching
    anything k3lab reads."""
    name = BY_PATH[rel]
    schema = data.SCHEMAS[name][1]
    if schema is ModelConfigFile:
        # the keys k3lab reads are the ModelConfig's; the unread ones stay as published
        model = next(m for m, n in specs.MODEL_FILES.items() if n == name)
        data.clear_cache()
        got = specs.load_model(model)
        assert got == clean["models"][model] and got.quant_key == clean["models"][model].quant_key
        assert got.provenance == clean["models"][model].provenance
        # what reads the raw config: claim S1's draft-key scan, notebook 01's comparison with
        # aiconfigurator's copy (which shows a changed text_config field: documented)
        assert f2.draft_config_keys(got) == f2.draft_config_keys(clean["models"][model])
        if model == "kimi-k3":
            shown = [d for d in crosscheck.config_differences() if d not in clean["k3_differences"]]
            assert all(d[0] == field for d in shown), shown
        return
    if schema is BenchServing and how == "unknown_key":
        keys = list(REQUIRED_KEYS) + list(OPTIONAL_KEYS)
        got = data.read(name)
        want = clean["loaded"][name]
        assert [{k: r.get(k) for k in keys} for r in got] == [{k: r.get(k) for k in keys} for r in want]
        return
    pytest.fail(f"data/{rel}: {how} was accepted, and its schema documents no such allowance")


# --------------------------------------------------------------------------- the tests


def test_every_file_under_data_is_a_known_input_or_documented():
    unknown = [rel for rel in FILES if rel not in BY_PATH and rel not in data.NOT_INPUTS]
    assert unknown == [], f"register these in k3lab.data.SCHEMAS (or NOT_INPUTS with a reason): {unknown}"
    assert not [rel for rel in data.NOT_INPUTS if rel in BY_PATH]
    missing = [rel for rel in BY_PATH if rel not in FILES]
    assert missing == [], f"SCHEMAS names files that are not there: {missing}"


@pytest.mark.parametrize("rel, how", CASES)
def test_a_corrupted_file_is_refused_in_one_line_or_has_no_effect(rel, how, clean, corrupted):
    name = BY_PATH.get(rel)
    made = corrupt(rel, (DATA / rel).read_bytes(), how, data.required_keys(name) if name else [])
    if made is None:
        assert how in NUMBER_CASES  # no number to corrupt, or it already was 0
        return
    content, field = made
    corrupted(rel, content)
    if name is None:                                   # not an input: nothing may change
        assert rel in data.NOT_INPUTS
    else:
        try:
            doc = data.read(name)
            if name in data.CROSS_CHECKED:
                data.cross_checks(**{name: doc})
        except data.DataError as e:
            _check_line(str(e), rel, field)
        else:
            _accepted_effect(rel, how, field, clean)
    if rel in clean["fit_reads"] or name is None:
        rc, out, err = _fit()
        if rc == 0:
            assert out == clean["fit"] and err == "", f"fit changed its answer silently for {rel} ({how})"
        else:
            lines = err.strip().splitlines()
            assert rc == 2 and len(lines) == 1 and out == "", (rc, out, err)
            assert lines[0].startswith("k3lab fit: error: data/") and f"data/{rel}" in lines[0], lines[0]


# one case per kind of file, through the real command line
REPRODUCE_CASES = {
    "yaml": ("hardware.yaml", "duplicate_key"),
    "model config": ("model/kimi_k3_config.json", "duplicate_key"),
    "transcript": ("measured/cpu-2core/sglang_topk_repro.json", "inf"),
    "meta": ("measured/cpu-2core/topk_renorm.meta.json", "string"),
    "jsonl": ("measured/cpu-2core/bench_live_smoke.jsonl", "truncated"),
    "csv": ("measured/cpu-2core/attention_heads.csv", "negative"),
}


def test_the_reproduce_cases_cover_every_kind_of_file():
    assert {kind(rel) for rel in FILES if rel in BY_PATH} == set(REPRODUCE_CASES)
    assert all(kind(rel) == k for k, (rel, _) in REPRODUCE_CASES.items())


def _reproduce(data_dir: Path, results: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, K3LAB_DATA=str(data_dir), K3LAB_RESULTS=str(results))
    env.pop("K3LAB_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "k3lab", "reproduce", "--profile", "ci"], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("file_kind", list(REPRODUCE_CASES))
def test_reproduce_stops_at_the_door_in_one_line(file_kind, tmp_path, clean):
    rel, how = REPRODUCE_CASES[file_kind]
    d = tmp_path / "data"
    shutil.copytree(DATA, d)
    content, field = corrupt(rel, (DATA / rel).read_bytes(), how, data.required_keys(BY_PATH[rel]))
    (d / rel).write_bytes(content)
    results = tmp_path / "results"
    p = _reproduce(d, results)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"k3lab reproduce: error: data/{rel}"), p.stderr
    if field is not None:
        assert field in lines[0], lines[0]
    assert "running" not in p.stdout, "a notebook ran before the inputs were checked"
    assert not results.exists() or not any(results.iterdir()), sorted(results.rglob("*"))

"""End to end: `make reproduce` twice (offline profile) into two scratch folders.

Checks what the issues ask of the pipeline as a whole: every notebook executes from its
defaults, two runs write byte-identical CSVs, the manifest lists every file with its
sha256, every claim of the article ends with a method and a verdict, the report is
rendered, and the README's findings table is not stale.
"""

from pathlib import Path

import pandas as pd
import pytest

from k3lab import claims, pipeline, report, specs, transaction
from k3lab.paths import REPO_ROOT
from study_helpers import results_at

pytestmark = pytest.mark.slow


def _run_into(folder: Path, report: bool = True) -> Path:
    with results_at(folder):
        pipeline.run("offline", report=report)
    return folder


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two offline runs; the second only to compare CSVs byte for byte, so without the report
    (the page is the first run's to check)."""
    a = _run_into(tmp_path_factory.mktemp("run_a"))
    b = _run_into(tmp_path_factory.mktemp("run_b"), report=False)
    return a, b


def test_every_notebook_executed(two_runs):
    a, _ = two_runs
    for nb in pipeline.notebooks():
        assert (a / nb.stem / f"{nb.stem}.ipynb").exists(), nb.stem


def test_csvs_byte_identical_across_runs(two_runs):
    a, b = two_runs
    csv_a = sorted(p.relative_to(a) for p in a.rglob("*.csv"))
    csv_b = sorted(p.relative_to(b) for p in b.rglob("*.csv"))
    assert csv_a == csv_b
    assert len(csv_a) >= 6  # each finding writes tables, plus the ledger
    different = [str(p) for p in csv_a if (a / p).read_bytes() != (b / p).read_bytes()]
    assert different == []


def test_no_temporary_files_left(two_runs):
    a, _ = two_runs
    # nothing but k3lab's marker of the folder (k3lab.transaction.MARKER) starts with a dot
    assert [p for p in a.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".")] == [a / transaction.MARKER]


def test_manifest_lists_every_file_with_its_hash(two_runs):
    import hashlib
    import json

    a, _ = two_runs
    man = json.loads((a / "manifest.json").read_text())
    files = {str(p.relative_to(a)) for p in a.rglob("*")
             if p.is_file() and p.name not in ("manifest.json", transaction.MARKER)}   # the marker is the folder's
    assert set(man["files"]) == files
    for rel, digest in man["files"].items():
        assert hashlib.sha256((a / rel).read_bytes()).hexdigest() == digest, rel
    assert man["profile"] == "offline" and set(man["notebooks"]) == {p.stem for p in pipeline.notebooks()}


def test_every_claim_has_a_verdict_and_evidence(two_runs):
    a, _ = two_runs
    df = pd.read_csv(a / "claims.csv", dtype=str, keep_default_na=False)
    assert list(df.claim_id) == list(claims.registry())
    assert set(df.verdict) <= set(claims.VERDICTS), set(df.verdict)
    assert (df.verdict != "").all(), list(df[df.verdict == ""].claim_id)
    assert (df.evidence.str.strip() != "").all()
    assert set(df.method) <= set(claims.METHODS)
    # a model's output is in `bound`, never in `reproduced`
    modelled = df[df.method == "modelled"]
    assert (modelled.reproduced == "").all() and (modelled.bound != "").all()


def test_report_renders_every_notebook(two_runs):
    a, _ = two_runs
    html = (a / "report.html").read_text(encoding="utf-8")
    for nb in pipeline.notebooks():
        assert f'id="{nb.stem}"' in html
    for cid in claims.registry():
        assert f">{cid}<" in html
    assert "<script src" not in html and "The decision" in html


def test_readme_findings_table_is_current(two_runs):
    a, _ = two_runs
    for doc in report.GENERATED_DOCS:
        assert report.readme_is_current(REPO_ROOT / doc, a / "claims.csv"), \
            f"{doc}'s generated blocks are stale: run `make readme-table` (after `make reproduce`)"


@pytest.mark.parametrize("gpu", ["mi355x", "b300"])
def test_readme_fit_example_is_current(gpu):
    """docs/cli.md shows `python -m k3lab fit --gpu <gpu> --gpus 8 --tp 8` with its real output."""
    import subprocess
    import sys

    cmd = ["fit", "--gpu", gpu, "--gpus", "8", "--tp", "8"]
    out = subprocess.run([sys.executable, "-m", "k3lab", *cmd],
                         capture_output=True, text=True, check=True, cwd=REPO_ROOT).stdout
    assert f"$ python -m k3lab {' '.join(cmd)}\n{out.strip()}\n```" in (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def test_readme_compare_example_is_current():
    """docs/cli.md shows `python -m k3lab compare --model deepseek-v3 --context 131072` in full
    (in a <details> block) with its real output."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "k3lab", "compare", "--model", "deepseek-v3", "--context", "131072"],
                         capture_output=True, text=True, check=True, cwd=REPO_ROOT).stdout
    assert out.strip() in (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("profile", ["deepseek-v3-mi300x-vs-h200", "kimi-k3-fp8-256k"])
def test_what_if_profiles_run_into_their_own_folder(tmp_path, profile):
    """The two example what-if profiles run end to end (another model; other GPUs) into
    results/runs/<profile>/, judge no claim, and price the chosen layouts: Kimi K3 on the serving
    model (fitted on K3 runs), another model only at the roofline bound."""
    with results_at(tmp_path):
        pipeline.run(profile, report=False)
    root = tmp_path / "runs" / profile
    assert (root / "manifest.json").exists()
    assert not list(tmp_path.glob("0[0-9]_*")), "a what-if run wrote into the study's results"
    assert not list(root.glob("*/claims.csv")), "a what-if run judged claims"
    nb4 = pipeline.load_profile(profile)["notebooks"]["04_throughput_perf_per_dollar"]
    k3 = nb4.get("model", "kimi-k3") == "kimi-k3"
    name = "perf_per_dollar_on_serving_model.csv" if k3 else "perf_per_dollar_at_model_bound.csv"
    assert not (root / "04_throughput_perf_per_dollar" / ("perf_per_dollar_at_model_bound.csv" if k3 else
                                                          "perf_per_dollar_on_serving_model.csv")).exists()
    priced = pd.read_csv(root / "04_throughput_perf_per_dollar" / name)
    want = {specs.parse_layout(x).gpu for x in nb4.get("layouts", [])} or {"mi355x", "b300", "b200"}
    assert set(priced["gpu"]) <= want and len(priced) > 0
    # the serving model's perf/$ (Kimi K3) takes the CLI's defaults unless the profile changes them: no
    # electricity (neither profile sets usd_per_kwh); another model's roofline bound keeps the notebook's price
    elec = priced["electricity_usd_per_gpu_hour"]
    assert (elec == 0).all() if k3 else (elec > 0).all()
    fits = pd.read_csv(root / "01_memory_fit" / "fit_plans.csv")
    assert len(fits) > 0

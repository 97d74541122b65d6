"""The GPU benchmark (issue 32) on a machine without a GPU: its CPU path end to end, its refusal
of a GPU that is not there, and the replay of committed runs — a hand-written synthetic
fixture (``tests/fixtures/gpu_measured/synthetic-gpu``, numbers chosen, not measured) and the
empty state. Timings are data: no test asserts one. The Triton kernel's offline twin is
``tests/sglang/test_triton_attention_interpreted.py`` (Triton's CPU interpreter)."""

from __future__ import annotations

import csv
import json
import math
import runpy
import shutil
import sys
import typing
from pathlib import Path

import pytest
import torch

from k3lab import attention as A
from k3lab import data, paths
from k3lab.findings import gpu_replay as R
from k3lab.live import device_bench as D
from k3lab.live import gpu_bench, sdpa_backends
from k3lab.schemas import gpu_bench as G

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "gpu" / "run.py"
FIXTURE = REPO / "tests" / "fixtures" / "gpu_measured"


def _run_script(monkeypatch, *args) -> int:
    """``python benchmarks/gpu/run.py ARGS`` in this process → its exit status."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *args])
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    return e.value.code


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_bench") / "cpu"
    mp = pytest.MonkeyPatch()
    try:
        assert _run_script(mp, "--device", "cpu", "--quick", "--no-progress", "--out-dir", str(out)) == 0
    finally:
        mp.undo()
    return out


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------- the CPU path end to end


def test_the_cpu_quick_run_writes_every_file_and_each_passes_its_schema(quick_run):
    meta = data.read_measured(G.GpuBenchMeta, quick_run / G.META)
    assert sorted(p.name for p in quick_run.iterdir()) == sorted([G.META, *meta["outputs"]])
    assert sorted(meta["outputs"]) == sorted(G.CSV.values())
    for fname in meta["outputs"]:
        assert len(data.read_measured(G.SCHEMA_OF[fname], quick_run / fname)) > 0


def test_the_meta_file_is_complete(quick_run):
    meta = data.read_measured(G.GpuBenchMeta, quick_run / G.META)
    assert set(meta) == set(typing.get_type_hints(G.GpuBenchMetaDoc))
    # the folder it wrote (outside this checkout) is not recorded: no path of the machine in the data
    assert meta["command"] == "python benchmarks/gpu/run.py --device cpu --quick --no-progress --out-dir <DIR>"
    assert meta["device"] == "cpu" and meta["gpu"] is None and meta["driver"] is None
    assert meta["torch"] == torch.__version__ and meta["quick"] is True
    assert meta["gpu_kind"] == f"cpu-{meta['cpu_count']}core"
    assert meta["sweep"]["prefill_seq_lens"] == list(gpu_bench.QUICK.prefill_seq_lens)
    assert meta["sections"] == list(G.SECTIONS)


def test_the_padded_output_sliced_back_equals_the_unpadded_one(quick_run):
    for part in ("prefill", "decode"):
        rows = _rows(quick_run / G.CSV[part])
        assert rows, part
        assert {r["heads_real"] for r in rows} == {"12"} and {r["heads_padded"] for r in rows} == {"16"}
        assert all(r["sliced_equals_12"] == "True" and float(r["max_abs_diff_sliced_vs_12"]) == 0 for r in rows)


def test_ratios_are_finite_and_positive_and_agree_with_the_times(quick_run):
    for part in ("prefill", "decode"):
        for r in _rows(quick_run / G.CSV[part]):
            for c in ("ratio_padded_over_12", "ratio_native_over_12"):
                assert math.isfinite(float(r[c])) and float(r[c]) > 0
            t12, tp = float(r["t_12_median_s"]), float(r["t_12_padded_median_s"])
            assert float(r["ratio_padded_over_12"]) == pytest.approx(tp / t12, rel=1e-4)
    for r in _rows(quick_run / G.CSV["prefill"]):
        assert float(r["ratio_flops"]) == pytest.approx(16 / 12, rel=1e-5)
    for r in _rows(quick_run / G.CSV["renorm"]):
        assert math.isfinite(float(r["ratio_to_k3lab_patch"])) and float(r["ratio_to_k3lab_patch"]) > 0


def test_which_kernels_ran_and_why_the_others_did_not(quick_run):
    rows = {(r["section"], r["kernel"]): r for r in _rows(quick_run / G.CSV["kernels"])}
    # every kernel of every section has a row, with a reason
    assert set(rows) == ({("prefill", k) for k in ("sdpa:flash", "sdpa:efficient", "sdpa:cudnn", "sdpa:math",
                                                    "triton:k3lab")}
                         | {("decode", k) for k in ("bmm", "sdpa:flash", "sdpa:efficient", "sdpa:cudnn", "sdpa:math")}
                         | {("renorm", k) for k in ("k3lab_patch", "k3lab_unchecked", "sort_fix", "rank_mask", "topk",
                                                    "flashinfer")})
    assert all(r["reason"] and "Triggered internally" not in r["reason"] for r in rows.values())
    assert rows["prefill", "triton:k3lab"]["status"] == "skipped" and "GPU" in rows["prefill", "triton:k3lab"]["reason"]
    assert rows["renorm", "flashinfer"]["status"] == "skipped"
    math_row = rows["prefill", "sdpa:math"]
    assert math_row["status"] == "ran" and math_row["v_head_dim_run"] == "128"  # math takes unequal head dims
    # a kernel that ran matches the fp32 reference to bf16 precision
    for r in rows.values():
        if r["status"] == "ran" and r["section"] != "renorm":
            assert float(r["max_abs_diff_vs_reference"]) < 0.05, r
        if r["status"] != "ran":
            assert r["max_abs_diff_vs_reference"] == "n/a"
    flash = rows["prefill", "sdpa:flash"]
    if flash["status"] == "ran" and flash["v_head_dim_run"] == "192":
        assert "zero-padded 128 -> 192" in flash["reason"]


def test_renorm_contenders_agree_with_the_sort_fix_and_host_syncs_are_na_on_a_cpu(quick_run):
    rows = _rows(quick_run / G.CSV["renorm"])
    assert {r["dtype"] for r in rows} == {"float32", "bfloat16"} and {r["k"] for r in rows} == {"1", "20", "50", "1024"}
    assert {r["host_syncs"] for r in rows} == {"n/a"}
    for r in rows:
        if r["contender"] in ("k3lab_patch", "k3lab_unchecked"):
            assert r["same_kept_set_as_sort_fix"] == "True" and float(r["max_abs_diff_vs_sort_fix"]) < 1e-2
        if r["contender"] == "topk":
            assert r["same_kept_set_as_sort_fix"] == "n/a"


# --------------------------------------------------------------------------- no GPU here


def test_device_cuda_without_a_gpu_is_one_line_and_a_nonzero_exit(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "nothing"
    assert _run_script(monkeypatch, "--device", "cuda", "--out-dir", str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("benchmarks/gpu/run.py: --device cuda: ") and "no CUDA device" in err
    assert not out.exists()


def test_live_mode_without_a_gpu_says_so_and_runs_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_bench.run_live(tmp_path / "live") is None
    said = capsys.readouterr().out
    assert said.startswith("live: skipped benchmarks/gpu/run.py: ") and said.count("\n") == 1
    assert not (tmp_path / "live").exists()


# --------------------------------------------------------------------------- replay


def test_the_replay_of_a_committed_run_is_labelled_with_its_gpu_kind():
    r = R.replay(measured=FIXTURE)
    assert r.source == "committed" and [x.kind for x in r.runs] == ["synthetic-gpu"]
    assert "synthetic-gpu (SYNTHETIC FIXTURE GPU" in r.state and "not absolute times" in r.state
    pre = r.table("prefill")
    assert list(pre.columns[:3]) == ["gpu_kind", "kernel", "seq_len"] and set(pre.gpu_kind) == {"synthetic-gpu"}
    assert dict(zip(pre.kernel, pre.ratio_padded_over_12)) == {"sdpa:flash": 1.35, "triton:k3lab": 1.4}
    dec = r.table("decode")
    assert list(dec.ratio_padded_over_12) == [1.25, 1.025] and list(dec.context) == [1024, 131072]
    ker = r.table("kernels")
    assert dict(zip(ker.kernel, ker.status))["sdpa:efficient"] == "refused"


def test_the_replay_says_what_k3labs_input_checks_cost():
    checks = R.replay(measured=FIXTURE).renorm_checks()
    assert len(checks) == 1
    row = checks.iloc[0]
    assert (row["gpu_kind"], row["dtype"], row["k"]) == ("synthetic-gpu", "float32", 20)
    assert row.checked_over_unchecked == pytest.approx(0.002 / 0.0015)
    assert row.sort_fix_over_k3lab_patch == pytest.approx(0.006 / 0.002)
    assert (row.host_syncs_checked, row.host_syncs_unchecked) == (6, 3)


def test_the_replay_saves_only_the_sections_asked_for(tmp_path):
    written = R.replay(measured=FIXTURE).save(tmp_path, ("renorm",))
    assert sorted(p.name for p in written) == ["gpu_kernels.csv", "gpu_renorm.csv"]
    assert {r["section"] for r in _rows(tmp_path / "gpu_kernels.csv")} == {"renorm"}


def test_with_no_gpu_run_committed_the_replay_says_so_and_writes_nothing(tmp_path, quick_run):
    empty = tmp_path / "measured"
    empty.mkdir()
    shutil.copytree(quick_run, empty / "cpu-2core")  # a CPU run of the same path is not a GPU measurement
    r = R.replay(measured=empty)
    assert r.runs == [] and r.state == R.NO_GPU and r.state.startswith("no GPU measurement committed")
    assert all(r.table(s) is None for s in R.VIEWS) and r.renorm_checks() is None
    assert r.save(tmp_path / "out", G.SECTIONS) == [] and not (tmp_path / "out").exists()


def test_the_repository_replay_is_what_data_measured_holds():
    """Today no GPU run is committed (issue 32 waits for a lent GPU): the notebooks show NO_GPU.
    Once one is, its folder is replayed and k3lab.data registers its files by itself."""
    metas = sorted((paths.DATA_DIR / "measured").glob(f"*/{G.META}"))
    gpu_kinds = [m.parent.name for m in metas if json.loads(m.read_text(encoding="utf-8"))["device"] != "cpu"]
    r = R.replay()
    assert [x.kind for x in r.runs] == gpu_kinds
    if not gpu_kinds:
        assert r.state == R.NO_GPU
    assert {n.split("@")[1] for n in data.SCHEMAS if n.startswith("gpu_bench_")} == {m.parent.name for m in metas}


def test_a_committed_folder_must_be_named_by_its_gpu_kind(tmp_path):
    root = tmp_path / "measured"
    shutil.copytree(FIXTURE / "synthetic-gpu", root / "nvidia-h200")
    with pytest.raises(data.DataError, match=r"^measured/nvidia-h200/gpu_bench\.meta\.json: gpu_kind: "
                                             r"'synthetic-gpu' is not its folder's name 'nvidia-h200'$"):
        R.replay(measured=root)


def test_a_corrupted_fixture_file_is_refused_in_one_line_naming_the_field(tmp_path):
    run = tmp_path / "measured" / "synthetic-gpu"
    shutil.copytree(FIXTURE / "synthetic-gpu", run)
    p = run / G.CSV["prefill"]
    p.write_text(p.read_text().replace(",1.35,1.3,", ",1.5,1.3,"), encoding="utf-8")
    with pytest.raises(data.DataError, match=r"gpu_bench_prefill\.csv: line 2: ratio_padded_over_12: 1\.5 != "):
        R.replay(measured=tmp_path / "measured")


def test_committed_runs_are_registered_as_inputs_of_k3lab_data():
    found = G.committed(FIXTURE, prefix="gpu_measured")
    assert found == {f"gpu_bench_{p}@synthetic-gpu": (f"gpu_measured/synthetic-gpu/{f}", G.SCHEMA_OF[f])
                     for p, f in (("prefill", G.CSV["prefill"]), ("decode", G.CSV["decode"]),
                                  ("renorm", G.CSV["renorm"]), ("kernels", G.CSV["kernels"]), ("meta", G.META))}


def test_fixture_tables_read_as_pandas_reads_them():
    """The loader's frame equals pandas' (``n/a`` → NaN), as ``test_data`` demands of committed tables."""
    import pandas as pd

    for fname, schema in G.SCHEMA_OF.items():
        if fname.endswith(".csv"):
            path = FIXTURE / "synthetic-gpu" / fname
            pd.testing.assert_frame_equal(data.read_measured(schema, path), pd.read_csv(path), check_exact=True)


# --------------------------------------------------------------------------- the primitives


def test_the_recorded_command_keeps_folders_inside_the_checkout_and_hides_others():
    assert gpu_bench.shown_command(["--root", str(REPO / "data" / "measured"), "--quick"]) == \
        "python benchmarks/gpu/run.py --root data/measured --quick"
    assert gpu_bench.shown_command(["--out-dir=/somewhere/else"]) == "python benchmarks/gpu/run.py --out-dir=<DIR>"


def test_device_kinds_are_slugs_of_the_device_name():
    assert D.slug("NVIDIA H200") == "nvidia-h200"
    assert D.slug("AMD Instinct MI355X") == "amd-instinct-mi355x"
    assert D.kind(torch.device("cpu")).startswith("cpu-") and D.kind(torch.device("cpu")).endswith("core")


def test_one_line_drops_torchs_build_path():
    msg = "Flash attention requires equal dims. (Triggered internally at /__w/pytorch/aten/x.cpp:21.)\nmore"
    assert D.one_line(msg) == "Flash attention requires equal dims."


def test_rounds_rotate_which_contender_goes_first():
    order = []
    fns = {n: (lambda n=n: order.append(n)) for n in "abc"}
    times = D.rounds(fns, D.Clock(torch.device("cpu")), repeats=3, warmups=1)
    assert order == list("abc") + list("abc") + list("bca") + list("cab")
    assert {n: len(t) for n, t in times.items()} == {"a": 3, "b": 3, "c": 3}


def test_a_refusing_sdpa_backend_gives_torchs_reason_in_one_line():
    if torch.cuda.is_available():
        pytest.skip("cuDNN may run here: the refusal checked is a CPU's")
    q, v = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 8)
    with pytest.raises(sdpa_backends.Refused) as e:
        sdpa_backends.probe("cudnn", q, q, v, causal=True, scale=0.25)
    assert str(e.value) and "\n" not in str(e.value) and "(v widened to 16: the same)" in str(e.value)
    assert sdpa_backends.probe("math", q, q, v, causal=True, scale=0.25) == (False, "v head dim 8 as given")


def test_the_prefill_kernel_pads_nothing_itself_and_the_wrapper_pads_heads():
    q = torch.randn(10, 12, 32)
    v = torch.randn(10, 12, 16)
    fn = sdpa_backends.prefill_kernel("math", False, 0.2)
    out = fn(q, q, v)
    assert out.shape == (10, 12, 16)
    assert torch.equal(A.with_head_padding(fn)(q, q, v), out)

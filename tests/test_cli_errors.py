"""A user's mistake at the command line is one line on stderr and exit status 2, never a
traceback (issue 12: "Tracebacks for user mistakes").

Every case runs ``python -m k3lab ...`` in a subprocess (``K3LAB_DEBUG`` unset,
``K3LAB_RESULTS`` in the test's tmp folder). ``reproduce`` against the fixture notebooks runs
the same ``k3lab.cli.main`` from a small driver that points the pipeline at them.
"""

import os
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from k3lab import transaction
from k3lab.paths import results_root
from study_helpers import REPO, make_study, write_driver


def _chmod_stops_writes() -> bool:
    """False when this process writes into a 0555 folder anyway (root, CAP_DAC_OVERRIDE)."""
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o555)
        try:
            open(os.path.join(d, "probe"), "w").close()
            return False
        except PermissionError:
            return True
        finally:
            os.chmod(d, 0o755)


EUID = os.geteuid()
READ_ONLY_OK = _chmod_stops_writes()
ROOT_REASON = (f"running as {'root' if EUID == 0 else 'uid'} (euid {EUID}) with the power to write "
               "into a chmod 0555 folder, so a read-only results/ cannot be simulated here")


def _env() -> dict:
    env = dict(os.environ, K3LAB_RESULTS=str(results_root()))
    env.pop("K3LAB_DEBUG", None)
    return env


def k3lab(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "k3lab", *args], capture_output=True, text=True,
                          env=_env(), cwd=REPO, timeout=timeout)


def reproduce(tmp_path: Path, *args: str, notebooks=("01_a", "02_b"), profiles=None) -> subprocess.CompletedProcess:
    nbs, params = make_study(tmp_path, *notebooks, profiles=profiles)
    driver = write_driver(tmp_path)
    return subprocess.run([sys.executable, str(driver), str(params), str(nbs), *args], capture_output=True,
                          text=True, env=_env(), cwd=REPO, timeout=300)


def one_line_error(p: subprocess.CompletedProcess, command: str) -> str:
    """Exit 2, no traceback, exactly one line on stderr, starting 'k3lab <command>: error:'."""
    assert p.returncode == 2, f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}"
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, f"stderr is not one line:\n{p.stderr}"
    assert lines[0].startswith(f"k3lab {command}: error: "), lines[0]
    return lines[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- fit


def test_fit_hbm_gb_inf():
    line = one_line_error(k3lab("fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--hbm-gb", "inf"), "fit")
    assert "hbm" in line.lower() and "inf" in line, line


# (unknown GPU and tp vs heads were one line before the refactor already; kept as guards)
def test_fit_unknown_gpu():
    line = one_line_error(k3lab("fit", "--gpu", "mi999x", "--gpus", "8", "--tp", "8"), "fit")
    assert "mi999x" in line and "mi355x" in line, line


def test_fit_tp_not_dividing_the_heads():
    import json

    cfg = json.loads((REPO / "data" / "model" / "kimi_k3_config.json").read_text())
    heads = (cfg.get("text_config") or cfg)["num_attention_heads"]
    tp = next(t for t in (5, 7, 9, 10) if heads % t)   # divides the GPUs, not the heads
    line = one_line_error(k3lab("fit", "--gpu", "mi355x", "--gpus", str(tp), "--tp", str(tp)), "fit")
    assert f"tp={tp}" in line and "heads" in line, line


def test_fit_unknown_variant():
    line = one_line_error(k3lab("fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--variant", "warp-drive"), "fit")
    assert "warp-drive" in line, line


def test_fit_unknown_model():
    line = one_line_error(k3lab("fit", "--model", "kimi-k9", "--gpu", "mi355x", "--gpus", "8", "--tp", "8"), "fit")
    assert "kimi-k9" in line, line


@pytest.mark.parametrize("args, word", [
    (("--mamba-full-memory-ratio", "0"), "--mamba-full-memory-ratio"),
    (("--mamba-full-memory-ratio", "x"), "--mamba-full-memory-ratio"),
    (("--max-mamba-cache-size", "0"), "--max-mamba-cache-size"),
    (("--max-mamba-cache-size", "-1"), "--max-mamba-cache-size"),
    (("--mamba-full-memory-ratio", "0.5", "--max-mamba-cache-size", "9"), "no effect"),
    (("--disable-radix-cache", "--max-running-requests", "0"), "--max-running-requests"),
])
def test_fit_state_pool_flags(args, word):
    line = one_line_error(k3lab("fit", "--gpu", "b300", "--gpus", "8", "--tp", "8", *args), "fit")
    assert word in line, line


def test_fit_check_exit_status_through_python_m():
    assert k3lab("fit", "--gpu", "b300", "--gpus", "8", "--tp", "8").returncode == 0
    p = k3lab("fit", "--gpu", "b300", "--gpus", "8", "--tp", "8", "--check")
    assert p.returncode == 1 and p.stderr == "" and "fits: no" in p.stdout


# --------------------------------------------------------------------------- bench


def test_bench_out_is_a_directory_dry_run(tmp_path):
    """A dry run checks the arguments the real run would use: --out must be a file path."""
    d = tmp_path / "somewhere"
    d.mkdir()
    line = one_line_error(k3lab("bench", "--base-url", "http://127.0.0.1:30000", "--out", str(d), "--dry-run"), "bench")
    assert "somewhere" in line and "directory" in line, line


def test_bench_out_is_a_directory_is_refused_before_running(tmp_path):
    d = tmp_path / "somewhere"
    d.mkdir()
    p = k3lab("bench", "--base-url", f"http://127.0.0.1:{free_port()}", "--concurrency", "1", "--out", str(d))
    line = one_line_error(p, "bench")
    assert "somewhere" in line and "directory" in line, line
    assert sorted(os.listdir(tmp_path)) == ["somewhere"] and not os.listdir(d)


def test_bench_without_sglang_or_server_says_why_in_one_line(tmp_path):
    """The live sweep cannot run here (no sglang in .venv, no server on the port): one line
    saying which (bench_serving.not_ready), nothing written, no child-process noise."""
    out = tmp_path / "sweep" / "bench.jsonl"
    p = k3lab("bench", "--base-url", f"http://127.0.0.1:{free_port()}", "--concurrency", "1", "--out", str(out))
    line = one_line_error(p, "bench")
    assert "sglang is not installed" in line or "no server answers" in line, line
    assert not out.exists()
    assert not (out.parent.exists() and os.listdir(out.parent)), os.listdir(out.parent)


# --------------------------------------------------------------------------- reproduce


def test_reproduce_unknown_profile():
    line = one_line_error(k3lab("reproduce", "--profile", "nope"), "reproduce")
    assert "unknown profile 'nope'" in line and "offline" in line, line


@pytest.mark.slow
def test_reproduce_broken_profile_yaml(tmp_path):
    p = reproduce(tmp_path, "--profile", "broken", profiles={"broken": "defaults: [mode: offline\n"})
    line = one_line_error(p, "reproduce")
    assert "params/broken.yaml: not valid YAML" in line, line
    assert not results_root().exists()


@pytest.mark.slow
def test_reproduce_undeclared_parameter(tmp_path):
    p = reproduce(tmp_path, "--profile", "bad", profiles={"bad": "notebooks: {01_a: {colour: red}}\n"})
    line = one_line_error(p, "reproduce")
    assert "01_a.ipynb" in line and "colour" in line, line
    assert not results_root().exists()


@pytest.mark.slow
def test_reproduce_failing_notebook_is_one_line(tmp_path):
    """The cell, the error, and where the executed notebook showing it was kept."""
    p = reproduce(tmp_path, "--profile", "study", notebooks=("01_a", "03_fail"))
    assert p.returncode == 2, p.stderr
    assert (results_root() / "failed" / "03_fail.ipynb").exists()
    line = one_line_error(p, "reproduce")
    assert "03_fail.ipynb" in line and "cell [" in line and "boom on purpose" in line, line
    assert "failed/03_fail.ipynb" in line, line


@pytest.mark.slow
def test_reproduce_results_path_is_a_file(tmp_path):
    """Root-proof stand-in for an unwritable results folder: K3LAB_RESULTS names a file."""
    results_root().parent.mkdir(parents=True, exist_ok=True)
    results_root().write_text("not a folder\n")
    p = reproduce(tmp_path, "--profile", "study")
    line = one_line_error(p, "reproduce")
    assert str(results_root()) in line, line
    assert results_root().read_text() == "not a folder\n"


@pytest.mark.skipif(not READ_ONLY_OK, reason=ROOT_REASON)
def test_reproduce_read_only_results(tmp_path):
    root = results_root()
    transaction.claim(root)   # a k3lab results folder (with its marker), then made read-only
    root.chmod(0o555)
    try:
        p = reproduce(tmp_path, "--profile", "study")
        line = one_line_error(p, "reproduce")
        assert "permission denied" in line.lower(), line
        assert sorted(os.listdir(root)) == [transaction.MARKER]
    finally:
        root.chmod(0o755)


@pytest.mark.skipif(not READ_ONLY_OK, reason=ROOT_REASON)
def test_report_read_only_results(tmp_path):
    import pandas as pd

    from k3lab import claims, io

    root = results_root()
    for nb in sorted({c.notebook for c in claims.registry().values()}):
        rows = [{"claim_id": c.id, "method": c.method, "reproduced": "", "bound": "",
                 "verdict": "not reproducible here", "rule": c.rule, "evidence": "hand-written", "notes": ""}
                for c in claims.registry().values() if c.notebook == nb]
        io.write_csv(pd.DataFrame(rows, columns=claims.RECORD_COLUMNS), root / nb / "claims.csv")
    modes = {}
    for d in [root, *(p for p in root.iterdir() if p.is_dir())]:
        modes[d] = stat.S_IMODE(d.stat().st_mode)
        d.chmod(0o555)
    try:
        line = one_line_error(k3lab("report"), "report")
        assert "permission denied" in line.lower(), line
        assert not (root / "report.html").exists()
    finally:
        for d, m in modes.items():
            d.chmod(m)


# --------------------------------------------------------------------------- impossible numbers (issue 28)


def main_in_process(capsys, *args) -> tuple[int, str, str]:
    """``python -m k3lab ARGS`` in this process (faster than a subprocess) → (status, out, err)."""
    from k3lab import cli

    try:
        code = cli.main(list(args))
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code: int, err: str, command: str) -> str:
    assert code == 2 and "Traceback" not in err, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"k3lab {command}: error: "), err
    return lines[0]


FIT = ("fit", "--gpu", "mi355x", "--tp", "8")
BIG = "1" + "0" * 40   # a 41-digit integer


@pytest.mark.parametrize("args, flag", [
    ((*FIT, "--gpus", BIG), "--gpus"),
    ((*FIT, "--gpus", "8", "--hbm-gb", "1e40"), "--hbm-gb"),
    ((*FIT, "--gpus", "8", "--hbm-gb", "1e308"), "--hbm-gb"),
    ((*FIT, "--gpus", "8", "--hbm-gb", "1e309"), "--hbm-gb"),
    ((*FIT, "--gpus", "8", "--init-overhead-gib", "1e308"), "--init-overhead-gib"),
    ((*FIT, "--gpus", "8", "--mem-fraction", "nan"), "--mem-fraction"),
    ((*FIT, "--gpus", "8", "--max-mamba-cache-size", BIG), "--max-mamba-cache-size"),
    ((*FIT, "--gpus", "8", "--pp", BIG), "--pp"),
    (("compare", "--usd-per-gpu-hour", "mi355x=1e308"), "--usd-per-gpu-hour"),
    (("compare", "--usd-per-gpu-hour", "mi355x=inf"), "--usd-per-gpu-hour"),
    (("compare", "--usd-per-gpu-hour", "mi355x=nan"), "--usd-per-gpu-hour"),
    (("compare", "--tok-s", "b300=1e308"), "--tok-s"),
    (("compare", "--context", BIG), "--context"),
    (("compare", "--top", BIG), "--top"),
    (("predict", "--gpu", "mi355x", "--gpus", BIG, "--tp", "8", "--input-len", "1024", "--output-len", "400",
      "--concurrency", "8"), "--gpus"),
    (("predict", "--layout", "8xmi355x tp8", "--input-len", "1024", "--output-len", "400", "--concurrency", BIG),
     "--concurrency"),
    (("predict", "--layout", "8xmi355x tp8", "--input-len", "1e308", "--output-len", "400", "--concurrency", "8"),
     "--input-len"),
    (("predict", "--layout", "8xmi355x tp8", "--input-len", "1024", "--output-len", "400", "--concurrency", "8",
      "--spec", "dspark", "--accept-len", "1e308"), "--accept-len"),
    (("bench", "--base-url", "http://127.0.0.1:1", "--input-len", BIG, "--dry-run"), "--input-len"),
    (("bench", "--base-url", "http://127.0.0.1:1", "--concurrency", BIG, "--dry-run"), "concurrency"),
])
def test_numbers_past_physical_sense_are_one_line(capsys, args, flag):
    line = one_line(*main_in_process(capsys, *args)[::2], args[0])
    assert flag in line and ("at most" in line or " to " in line or "integer" in line), line


def test_overflow_is_one_line_through_python_m():
    one_line_error(k3lab(*FIT, "--gpus", "8", "--hbm-gb", "1e308"), "fit")
    line = one_line_error(k3lab("compare", "--usd-per-gpu-hour", "mi355x=1e308"), "compare")
    assert "$/GPU-hour" in line and "inf" not in line, line


@pytest.mark.parametrize("module, build", [
    ("k3lab.fit_cli", lambda m: m._parser(["mi355x"])),
    ("k3lab.compare_view", lambda m: m._parser()),
    ("k3lab.serving.cli", lambda m: m._parser()),
])
def test_every_numeric_flag_states_its_cap_in_help(module, build):
    import importlib

    from k3lab import limits

    ap = build(importlib.import_module(module))
    typed = [a for a in ap._actions if a.type is not None and a.type is not str]
    assert typed, "no numeric flags found"
    for a in typed:
        assert getattr(a.type, "__module__", "") == "k3lab.limits", f"{a.option_strings}: no cap"
        assert any(c.text() in a.help for c in limits.CAPS.values()), f"{a.option_strings}: {a.help!r}"


def test_bench_help_states_its_caps(capsys):
    code, out, _ = main_in_process(capsys, "bench", "--help")
    text = " ".join(out.split())
    assert code == 0 and text.count(" to 10,000,000 ") == 4 and "(>0, at most 1)" in text, out


@pytest.mark.parametrize("args", [
    ("--model", "deepseek-v3", "--context", "1000000"),
    ("--model", "deepseek-v3", "--context", "1000000", "--check"),
    ("--kv-dtype", "fp8", "--context", "2000000", "--check"),
])
def test_fit_refuses_a_context_above_the_models_maximum(capsys, args):
    """compare refused it; fit said "fits: yes" (and --check exited 0)."""
    line = one_line(*main_in_process(capsys, "fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", *args)[::2], "fit")
    assert "exceeds" in line and "maximum" in line and "max_position_embeddings" in line, line


@pytest.mark.parametrize("args", [("reproduce", "--bogus"), ("reproduce", "--profile"), ("bench",),
                                  ("bench", "--base-url", "x", "--range-ratio", "2")])
def test_reproduce_and_bench_usage_errors_are_one_line(capsys, args):
    line = one_line(*main_in_process(capsys, *args)[::2], args[0])
    assert "usage" not in line, line


# --------------------------------------------------------------------------- a reader that went away (issue 35, M3)


def k3lab_into_a_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """``python -m k3lab ARGS | head -0`` without the race: stdout is a pipe whose read end is
    closed before the command starts, so its first write meets EPIPE."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "k3lab", *args], stdout=w, stderr=subprocess.PIPE, text=True,
                              env=_env(), cwd=REPO, timeout=180)
    finally:
        os.close(w)


@pytest.mark.parametrize("args, status", [
    (("quote",), 0),
    (("fit", "--gpu", "b300", "--gpus", "8", "--tp", "8"), 0),
    (("fit", "--gpu", "b300", "--gpus", "8", "--tp", "8", "--check"), 1),   # documented: 1 when it does not fit
    (("compare",), 0),
])
def test_a_closed_stdout_is_quiet_and_keeps_the_exit_status(args, status):
    """`quote | head -1` printed "error: [Errno 32] Broken pipe" and exited 2; `fit --check | head -1`
    exited 2 instead of 1. The status is the one the same command gives into a file."""
    p = k3lab_into_a_closed_pipe(*args)
    assert p.stderr == "", p.stderr
    assert p.returncode == status == k3lab(*args).returncode


def test_reproduce_with_a_kernel_that_is_not_installed_says_so_before_running(tmp_path):
    """M1: `--kernel nosuchkernel` was reported as "01_memory_fit.ipynb failed at cell [None]:
    NoSuchKernel" after the run started. Now one line naming --kernel and the kernels found, and
    nothing written."""
    p = reproduce(tmp_path, "--profile", "study", "--kernel", "nosuchkernel")
    line = one_line_error(p, "reproduce")
    assert "--kernel 'nosuchkernel'" in line and "kernels found:" in line and "k3lab" in line, line
    assert "failed at cell" not in line and not results_root().exists()


# --------------------------------------------------------------------------- issue 35: M10, M8

LAY = ("--input-len", "1024", "--output-len", "400")


@pytest.mark.parametrize("args, said", [
    (("predict", "--layout", "8xmi355x tp8", "--layout", "8xb300 tp8", *LAY, "--concurrency", "8"),
     "--layout given twice ('8xmi355x tp8', then '8xb300 tp8')"),
    (("predict", "--layout", "8xmi355x tp8", *LAY, "--concurrency", "16", "--concurrency", "32"),
     "--concurrency given twice ('16', then '32')"),
    (("predict", "--layout=8xmi355x tp8", *LAY, "--concurrency", "8", "--layout", "8xmi355x tp8"),
     "--layout given twice ('8xmi355x tp8', then '8xmi355x tp8')"),
    (("quote", "--max-tpot", "50", "--max-tpot", "20"), "--max-tpot given twice ('50', then '20')"),
    (("compare", "--variant", "ep", "--variant", "ep"), "--variant 'ep' given twice"),
    (("fit", "--gpu", "b300", "--gpus", "8", "--tp", "8", "--mem-fraction", "0.8", "--mem-fraction=0.85"),
     "--mem-fraction given twice ('0.8', then '0.85')"),
])
def test_a_single_value_flag_given_twice_is_refused_in_one_line(capsys, args, said):
    """M10: argparse kept the last value silently; which one the user meant is not to be guessed."""
    line = one_line(*main_in_process(capsys, *args)[::2], args[0])
    assert said in line, line


def test_repeatable_flags_still_take_distinct_values(capsys):
    code, out, err = main_in_process(capsys, "compare", "--gpu", "mi355x", "--gpu", "b300", "--top", "1", "--json")
    assert code == 0 and err == "", err


@pytest.mark.parametrize("args, said", [
    (("quote", "--context", "1024", "--input-len", "4096", "--output-len", "400"),
     "--context 1,024 is below one request of the workload: --input-len + --output-len = 4,096 + 400 = 4,496"),
    (("compare", "--context", "1024", "--input-len", "4096", "--output-len", "400"),
     "--context 1,024 is below one request of the workload: --input-len + --output-len = 4,096 + 400 = 4,496"),
    # unset lengths are the article's workload, 1,024 in / 400 out (data/article_table.yaml)
    (("compare", "--context", "1000"), "--context 1,000 is below one request of the workload: --input-len + "
                                       "--output-len = 1,024 + 400 = 1,424, the article's workload where unset"),
])
def test_a_context_below_one_request_of_the_workload_is_refused(capsys, args, said):
    """M8: the fit was judged at a request shorter than the one the workload prices."""
    line = one_line(*main_in_process(capsys, *args)[::2], args[0])
    assert said in line, line


def test_a_profiles_context_below_its_workload_is_refused():
    from k3lab import nbparams

    defaults = {"model": "kimi-k3", "context_tokens": 0, "input_len": 1024, "output_len": 400}
    with pytest.raises(nbparams.ParameterError, match=r"^parameter 'context_tokens' 1,000 is below one request "
                                                      r"of the workload: input_len \+ output_len = 1,024 \+ 400"):
        nbparams.validate(defaults, {"context_tokens": 1000})
    assert nbparams.validate(defaults, {"context_tokens": 1424})["context_tokens"] == 1424

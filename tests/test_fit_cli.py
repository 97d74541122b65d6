"""``python -m k3lab fit`` (k3lab.fit_cli): what the output says, the new flags, ``--check``.

Expected numbers come from outside the code under test: the replica count from the layout
(GPUs / (tp × pp)), the DSpark draft's bytes and the pool figures from the hand arithmetic of
tests/test_pool_sizing.py and tests/test_memory.py, the start-up overhead from the flag given.
"""

import io
import json
import math
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest

from k3lab import fit_cli, memory, specs

GiB = 2**30
B300 = ["--gpu", "b300", "--gpus", "8", "--tp", "8"]
MI = ["--gpu", "mi355x", "--gpus", "8", "--tp", "8"]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = fit_cli.main(list(argv))
        except SystemExit as e:  # argparse's own exits (--help, a type error through _Parser.error)
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------- bad values: one line, exit 2


@pytest.mark.parametrize("argv, word", [
    ([*B300, "--mamba-full-memory-ratio", "0"], "--mamba-full-memory-ratio: must be 0.001 to 1,000"),
    ([*B300, "--mamba-full-memory-ratio", "-0.5"], "--mamba-full-memory-ratio: must be 0.001 to 1,000"),
    # issue 35: a ratio that leaves the state pool nothing blamed the GPU's memory
    ([*B300, "--mamba-full-memory-ratio", "1e-320"], "--mamba-full-memory-ratio: must be 0.001 to 1,000 (the state pool"),
    ([*B300, "--mamba-full-memory-ratio", "nan"], "--mamba-full-memory-ratio: must be a finite number"),
    ([*B300, "--mamba-full-memory-ratio", "inf"], "--mamba-full-memory-ratio: must be a finite number"),
    ([*B300, "--mamba-full-memory-ratio", "lots"], "--mamba-full-memory-ratio: must be a number"),
    ([*B300, "--max-mamba-cache-size", "0"], "--max-mamba-cache-size: must be 1 to"),
    ([*B300, "--max-mamba-cache-size", "-5"], "--max-mamba-cache-size: must be 1 to"),
    ([*B300, "--max-mamba-cache-size", "1.5"], "--max-mamba-cache-size: must be an integer"),
    ([*B300, "--max-running-requests", "0"], "--max-running-requests: must be 1 to"),
    ([*B300, "--disable-radix-cache", "yes"], "unrecognized arguments: yes"),
    ([*B300, "--mamba-full-memory-ratio", "0.5", "--max-mamba-cache-size", "100"],
     "no effect with --max-mamba-cache-size"),
    ([*B300, "--mamba-full-memory-ratio", "0.5", "--disable-radix-cache", "--max-running-requests", "8"],
     "no effect with --disable-radix-cache with --max-running-requests"),
    (["--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--tp", "8", "--max-mamba-cache-size", "10"],
     "no linear-attention state pool"),
    (["--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--tp", "8", "--mamba-full-memory-ratio", "0.5"],
     "no linear-attention state pool"),
    ([*B300, "--init-overhead-gib", "-1"], "--init-overhead-gib: must be 0 to"),
    ([*B300, "--init-overhead-gib", "nan"], "--init-overhead-gib: must be a finite number"),
    (["--gpu", "b300", "--gpus", "8"], "the following arguments are required: --tp"),
])
def test_bad_values_give_one_line_and_exit_2(argv, word):
    rc, out, err = run(*argv)
    assert rc == 2 and out == ""
    assert err.startswith("k3lab fit: error: ") and word in err, err
    assert err.count("\n") == 1


def test_radix_cache_off_without_max_running_requests_is_accepted():
    """sglang 0.5.23 takes the ratio branch then (one state slot per request); nothing refuses it."""
    rc, out, _ = run(*B300, "--disable-radix-cache", "--json")
    d = json.loads(out)
    assert rc == 0 and d["state_pool_branch"] == "ratio" and d["slots_per_request"] == 1
    assert d["state_pool_settings"]["disable_radix_cache"] is True


# --------------------------------------------------------------------------- --check


@pytest.mark.parametrize("argv, rc_check", [
    (B300, 1),                                              # 990,592 tokens < 1,048,576
    ([*B300, "--mamba-full-memory-ratio", "0.5"], 0),       # a third of the rest to state: ~1.27M tokens
    ([*B300, "--kv-dtype", "fp8"], 0),                      # twice the tokens
    (MI, 1),                                                # ROCm default padding: 227k tokens
    ([*MI, "--variant", "aiter-k3-opt"], 0),                # the article's setting: 1.37M tokens
    (["--gpu", "b200", "--gpus", "8", "--tp", "8"], 1),     # the weights do not load
])
def test_check_exit_status(argv, rc_check):
    rc, out, _ = run(*argv)
    assert rc == 0 and "fits:" in out                       # without --check: 0 whenever a plan prints
    rc, out, _ = run(*argv, "--check")
    assert rc == rc_check
    rc, out, _ = run(*argv, "--check", "--json")
    assert rc == rc_check and json.loads(out)["fits"] is (rc_check == 0)


# --------------------------------------------------------------------------- what the output says


def _row(out: str, name: str) -> list[int]:
    line = next(ln for ln in out.splitlines() if ln.strip().startswith(name))
    return [int(x.replace(",", "")) for x in re.findall(r"\d[\d,]*", line[line.index(name) + len(name):])]


def test_per_replica_wording_and_totals():
    rc, out, _ = run("--gpu", "mi355x", "--gpus", "16", "--tp", "8")
    assert rc == 0
    assert "16×MI355X TP8: 2 replicas of TP8 (8 GPUs each)" in out     # 16 / (8 × 1) = 2
    assert "per replica (2 replicas):" in out and "all replicas" in out
    one = memory.plan(specs.load_model("kimi-k3"), "mi355x", 8, 8)    # one replica on its own
    assert _row(out, "max KV tokens")[:2] == [one.max_kv_tokens, 2 * one.max_kv_tokens]
    assert _row(out, "max running requests") == [one.max_running_requests, 2 * one.max_running_requests]
    rc, out, _ = run("--gpu", "mi355x", "--gpus", "16", "--tp", "8", "--json")
    d = json.loads(out)
    assert d["replicas"] == 2 and d["max_running_requests_total"] == 2 * d["max_running_requests"]
    rc, out, _ = run(*B300)
    assert "1 replica of TP8 (8 GPUs)" in out and "per replica (1 replica):" in out and "all replicas" not in out
    rc, out, _ = run("--gpu", "b300", "--gpus", "16", "--tp", "8", "--pp", "2")
    assert "1 replica of TP8×PP2 (16 GPUs)" in out


def test_start_up_overhead_is_printed():
    rc, out, _ = run(*B300)
    assert "start-up (init) overhead assumed: 0.0 GiB per GPU" in out and "upper bound" in out
    # newcomer 15: what overhead is realistic? the one public log of running requests k3lab predicts (16xH200 TP16,
    # data/public_startup_logs.yaml) ran 98 where the pools admit 110 at 0 GiB: 2.9 GiB admits 98, 2.8 more
    # (attack 6: with the log's 4 state slots a request, said; fit's default 5 gives 88 at 0 GiB)
    assert ("with 0 the pools are an upper bound; one public start-up log implies 2.9 GiB (cookbook_h200_tp16: 98 "
            "running on 16xh200 tp16 ep with 4 state slots a request, 110 at 0 GiB))") in out
    rc, out, _ = run(*B300, "--init-overhead-gib", "4")
    assert "start-up (init) overhead assumed: 4.0 GiB per GPU" in out and "upper bound" not in out
    assert "public start-up log" not in out
    rc, out, _ = run(*B300, "--init-overhead-gib", "4", "--json")
    d = json.loads(out)
    assert d["init_overhead_gib"] == 4.0 and d["init_overhead_bytes"] == 4 * GiB
    assert d["sglang_settings"]["init_overhead_gib"] == 4.0


def test_resident_rows_only_for_what_is_configured():
    rc, out, _ = run(*B300)
    assert "draft" not in out.lower() and "vision tower per GPU" in out and "KDA state pool" in out
    rc, out, _ = run(*B300, "--variant", "dspark")
    # RadixArk/Kimi-K3-DSpark at TP8: 1,158,864,642 B (tests/test_pool_sizing.py, by hand) = 1.1 GiB
    line = next(ln for ln in out.splitlines() if "DSpark draft per GPU" in ln)
    assert f"{1_158_864_642 / GiB:.1f} GiB" in line
    rc, out, _ = run("--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--tp", "8")
    assert "vision tower" not in out and "KDA state" not in out and "state per slot" not in out
    assert "no state pool (no linear-attention layers)" in out


def test_header_names_the_sglang_settings():
    rc, out, _ = run(*MI)
    head = out.splitlines()[:5]
    assert head[1] == "sglang 0.5.23 settings (rocm): --mem-fraction-static 0.9, KV cache bf16, 1-token pages"
    assert head[2].startswith("  variants: none (sglang's ROCm default")
    assert "384 → 512" in head[2] and "aiter-k3-opt" in head[2]          # 3072 / 8 = 384, aligned to 256
    assert "--mamba-full-memory-ratio 0.9 (sglang's default), radix cache on, 5 state slots per request" in head[3]
    assert "start-up (init) overhead assumed" in head[4]
    rc, out, _ = run(*MI, "--variant", "aiter-k3-opt", "--max-mamba-cache-size", "300")
    assert "variants: aiter-k3-opt (expert intermediate 384 per GPU" in out
    assert "state pool: --max-mamba-cache-size 300, radix cache on" in out and "(explicit branch)" in out
    rc, out, _ = run(*B300, "--disable-radix-cache", "--max-running-requests", "40")
    assert "--disable-radix-cache --max-running-requests 40" in out and "from_max_running_requests branch" in out
    rc, out, _ = run("--gpu", "b300", "--gpus", "16", "--tp", "8", "--pp", "2")
    assert "4 state slots per request (PP turns the overlap scheduler off)" in out


def test_settings_that_would_make_it_fit_are_listed_with_their_cost():
    p = memory.plan(specs.load_model("kimi-k3"), "b300", 8, 8)
    rc, out, _ = run(*B300)
    assert "a 1,048,576-token request fits: no  (fits only with a setting)" in out
    # (newcomer 48: "408 running requests, 1 request of 1,048,576 tokens" read as both at once): each limit alone
    assert (f"(each limit alone, per replica: running requests at most ({p.max_running_requests} as configured), and "
            "1,048,576-token requests held; `quote` says how many of yours run beside a held one)") in out
    for o in p.fit_options:
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(o.flags + " "))
        assert f"{o.max_running_requests:,} running requests at most; holds {o.full_context_requests} request" in line
    assert "k3lab's pick" in next(ln for ln in out.splitlines() if p.best_option.flags in ln)
    assert "no prefix caching" in next(ln for ln in out.splitlines() if "--disable-radix-cache" in ln)
    rc, out, _ = run(*MI)
    assert "no state-pool setting makes it fit" in out
    rc, out, _ = run(*MI, "--variant", "aiter-k3-opt", "--max-mamba-cache-size", "2000")
    assert "it fits with sglang's default state pool" in out and "no pools: the state pool's 2,000 slots (--max-mamba-cache-size 2,000) need" in out


def test_json_carries_the_new_fields_and_keeps_the_old():
    rc, out, _ = run(*B300, "--json")
    d = json.loads(out)
    assert {"weights_bytes_per_gpu", "max_kv_tokens", "weights_fit"} <= set(d)
    assert d["max_kv_tokens"] == 990_592 and d["weights_fit"] is True   # the figure for 8×B300
    assert d["replicas"] == 1 and d["init_overhead_gib"] == 0.0
    assert d["state_pool_branch"] == "ratio" and d["fits_with_defaults"] is False and d["fits"] is False
    assert d["verdict"] == "fits only with a setting"
    ratio = next(o for o in d["fit_options"] if o["branch"] == "ratio")
    assert d["fit_setting"] == ratio["flags"] == f"--mamba-full-memory-ratio {ratio['flags'].split()[-1]}"
    assert ratio["full_context_requests"] >= 1 and ratio["max_kv_tokens"] >= 1_048_576
    assert d["sglang_settings"]["release"] == "0.5.23" and d["sglang_settings"]["variants"] == []
    assert d["state_pool_settings"] == {"mamba_full_memory_ratio": 0.9, "max_mamba_cache_size": None,
                                        "disable_radix_cache": False, "max_running_requests": None, "flags": ""}
    rc, out, _ = run(*MI, "--variant", "aiter-k3-opt", "--json")
    d = json.loads(out)
    assert d["fits_with_defaults"] is True and d["fit_setting"] is None and d["fit_options"] == []
    assert not math.isnan(d["init_overhead_gib"])


def test_the_help_says_48_is_dsparks_cap_and_the_slots_may_admit_fewer():
    """Q3 (g): sglang sets --max-running-requests 48 with DSpark, but on 8xB300 TP8 the state pool's slots admit
    fewer (slots ÷ slots per request, from the plan): the help must not promise 48."""
    cfg = specs.load_model("kimi-k3")
    p = memory.plan(cfg, "b300", 8, 8, variants=("dspark",))
    assert p.max_running_requests == p.state_slots // p.slots_per_request < 48
    rc, out, _ = run("--help")
    flat = " ".join(out.split())
    assert "sglang's own; 48 with dspark" not in flat and "sglang sets 48 with dspark" in flat
    assert "the lower of the cap and what the state pool's slots allow" in flat
    assert "the pools may admit fewer" in fit_cli.VARIANT_SUMMARIES["dspark"]


# --------------------------------------------------------------------------- issue 35: S3, M2, M12


@pytest.mark.parametrize("flags, named", [
    (["--max-mamba-cache-size", "10000000"], "--max-mamba-cache-size 10,000,000"),
    (["--disable-radix-cache", "--max-running-requests", "10000000"], "--max-running-requests 10,000,000"),
])
def test_a_state_pool_larger_than_the_gpu_says_what_it_needs_never_a_negative_gib(flags, named):
    """S3: 10,000,000 slots (+ sglang's padding slot) of the B300's per-slot state, against the
    memory left after the weights: the line gives both, in GiB, and no negative figure."""
    rc, out, _ = run(*B300, *flags)
    assert rc == 0
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("no pools:"))
    assert not re.search(r"-\d", line), line
    slot = json.loads(run(*B300, "--json")[1])["kda_state_bytes_per_request"]
    need = (10_000_000 + 1) * slot / GiB
    m = re.search(r"10,000,000 slots \((.+?)\) need ([\d,.]+) GiB per GPU against ([\d,.]+) GiB free", line)
    assert m, line
    assert m.group(1) == named and float(m.group(2).replace(",", "")) == pytest.approx(need, abs=0.05)
    free = float(m.group(3).replace(",", ""))
    assert 0 < free < 288.4e9 / GiB  # below the B300's capacity (data/hardware.yaml, 288.4 GB usable)


def test_an_overhead_past_capacity_names_the_flag_the_value_and_the_capacity_in_gib():
    """M2: the MI355X's driver total is 309,220,868,096 B (data/hardware.yaml) = 287.98 GiB."""
    rc, out, err = run(*MI, "--init-overhead-gib", "288")
    assert rc == 2 and out == "" and err.count("\n") == 1
    cap = f"{309_220_868_096 / GiB:.2f}"
    assert err.startswith("k3lab fit: error: --init-overhead-gib 288 is not below ") and f"{cap} GiB per GPU" in err, err
    assert "bytes" not in err


@pytest.mark.parametrize("gpu, hbm, noted", [("mi355x", "288", True), ("b300", "288", True),
                                             ("mi355x", "309.2", False), ("mi355x", "250", False)])
def test_hbm_gb_equal_to_the_gib_label_gets_one_note(gpu, hbm, noted):
    """M12: both GPUs' "288 GB" labels are 288 GiB = 309.2 GB; --hbm-gb 288 reads them as GB."""
    rc, out, err = run("--gpu", gpu, "--gpus", "8", "--tp", "8", "--hbm-gb", hbm)
    assert rc == 0 and err == ""
    notes = [ln for ln in out.splitlines() if ln.startswith("note: --hbm-gb")]
    assert len(notes) == int(noted)
    if noted:
        assert f"{288 * GiB / 1e9:.1f} GB" in notes[0] and "288 GiB" in notes[0] and gpu.upper() in notes[0]
        d = json.loads(run("--gpu", gpu, "--gpus", "8", "--tp", "8", "--hbm-gb", hbm, "--json")[1])
        assert d["hbm_gb_note"] == notes[0]

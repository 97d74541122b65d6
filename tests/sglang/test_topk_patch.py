"""Real sglang 0.5.16 (CPU): the dense verify path fails as shipped; k3lab_patches fixes it;
sglang 0.5.23's torch fallback is the rank mask k3lab compares against. (The built wheel,
installed apart from the study: test_patches_wheel.py.)"""

import multiprocessing as mp
import os
from importlib.metadata import version

import pytest
import torch

import k3lab_patches as patches
from k3lab_patches import plugin, serve
from k3lab_patches.topk_renorm import PATCH, REPLACEMENTS

from k3lab import sampling
from k3lab.probes import topk_repro

VOCAB = 2048
MIX = "top_k=20 mixed with unrestricted"


@pytest.fixture(autouse=True)
def _clean():
    yield
    PATCH.revert()


def test_cpu_binds_what_rocm_got():
    from sglang.srt.speculative import dflash_utils as d

    assert version("sglang") == "0.5.16"
    assert d.top_k_renorm_prob is None and d.top_p_renorm_prob is None


def test_dense_path_typeerror_as_shipped():
    row = topk_repro.run_case("0.5.16", MIX, vocab=VOCAB)
    assert row["path"] == "dense"
    assert row["error"] == "TypeError: 'NoneType' object is not callable"


def test_apply_fixes_real_call_and_revert_restores():
    from sglang.srt.speculative import dflash_utils as d

    done = PATCH.apply(version("sglang"))
    assert done == ["sglang.srt.speculative.dflash_utils.top_k_renorm_prob",
                    "sglang.srt.speculative.dflash_utils.top_p_renorm_prob"]
    assert PATCH.apply(version("sglang")) == []
    requests = topk_repro.MIXES[MIX]
    logits = topk_repro.logits_for(len(requests), VOCAB)
    got = d.build_dflash_verify_target_probs(
        next_token_logits=logits, sampling_info=topk_repro.sampling_info(requests, VOCAB),
        draft_token_num=topk_repro.DRAFT_TOKENS, bs=len(requests))
    want = topk_repro.reference_target_probs(logits, requests, topk_repro.DRAFT_TOKENS)
    assert torch.equal(got != 0, want != 0)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    PATCH.revert()
    assert d.top_k_renorm_prob is None and d.top_p_renorm_prob is None


def test_unknown_version_refused():
    with pytest.raises(patches.UnsupportedSglangVersion):
        PATCH.apply("0.5.99")


def test_name_error_kills_a_child_with_did_you_mean():
    crash = topk_repro.crash_in_child(vocab=VOCAB)
    assert crash["returncode"] == 1
    assert crash["last_line"] == ("NameError: name 'top_k_renorm_prob' is not defined. "
                                  "Did you mean: 'top_p_renorm_prob'?")


def _spawned_child(q):
    from sglang.srt.plugins import load_plugins
    from sglang.srt.speculative import dflash_utils as d

    load_plugins()  # what every sglang scheduler process does first
    q.put(d.top_k_renorm_prob is REPLACEMENTS["top_k_renorm_prob"])


def _spawn_and_check(env_value):
    old = os.environ.get(plugin.ENV_ENABLE)
    if env_value is None:
        os.environ.pop(plugin.ENV_ENABLE, None)
    else:
        os.environ[plugin.ENV_ENABLE] = env_value
    try:
        ctx = mp.get_context("spawn")  # sglang's start method (entrypoints/engine.py)
        q = ctx.Queue()
        p = ctx.Process(target=_spawned_child, args=(q,))
        p.start()
        got = q.get(timeout=300)
        p.join(60)
        return got
    finally:
        if old is None:
            os.environ.pop(plugin.ENV_ENABLE, None)
        else:
            os.environ[plugin.ENV_ENABLE] = old


def test_spawned_scheduler_process_is_patched_through_the_plugin(monkeypatch):
    # needs k3lab-patches' entry point in .venv-sglang (make sglang-env: pip install -e ./patches)
    assert _spawn_and_check("1") is True
    assert _spawn_and_check(None) is False


def test_serve_passes_arguments_to_sglangs_parser(monkeypatch):
    import argparse

    from sglang.srt.server_args import ServerArgs

    monkeypatch.setattr(patches, "_PATCH_MODULES", ("k3lab_patches.topk_renorm",))
    monkeypatch.delenv(plugin.ENV_ENABLE, raising=False)
    seen = {}

    def runner(args):
        parser = argparse.ArgumentParser()
        ServerArgs.add_cli_args(parser)
        seen["ns"] = parser.parse_args(args)
        from sglang.srt.speculative import dflash_utils as d
        seen["patched"] = d.top_k_renorm_prob is REPLACEMENTS["top_k_renorm_prob"]
        return 0

    args = ["--model-path", "moonshotai/Kimi-K3", "--tp", "8", "--port", "31234",
            "--speculative-algorithm", "DSPARK", "--speculative-draft-model-path", "draft"]
    assert serve.main(["--"] + args, runner=runner) == 0
    ns = seen["ns"]
    assert (ns.model_path, ns.tp_size, ns.port) == ("moonshotai/Kimi-K3", 8, 31234)
    assert ns.speculative_algorithm == "DSPARK" and ns.speculative_draft_model_path == "draft"
    assert seen["patched"]


def _tied_cases():
    g = torch.Generator().manual_seed(5)
    out = []
    for dtype in (torch.float32, torch.bfloat16):
        logits = (torch.randn(32, 4096, generator=g) * 2).to(torch.bfloat16).float()
        probs = torch.softmax(logits, dim=-1).to(dtype)
        ks = torch.tensor([20, 50, 1, 200] * 8, dtype=torch.int32)
        out.append((probs, ks))
    return out


def test_sglang_0523_fallback_is_the_rank_mask():
    cases = _tied_cases()
    try:
        outs = topk_repro.run_sglang_0523_fallback(cases)
    except RuntimeError as e:
        pytest.fail(f"sglang 0.5.23 (make sglang-env) is part of this tier: {e}")
    for (probs, ks), got in zip(cases, outs):
        torch.testing.assert_close(got, sampling.top_k_rank_mask(probs, ks), atol=0, rtol=0)
        straddle = sampling.tie_straddles(probs, ks)
        assert straddle.any()  # bf16 logits: ties at the pivot are common
        ours = sampling.top_k_renorm_prob(probs, ks)
        differ = ((got != 0) != (ours != 0)).any(dim=1)
        assert torch.equal(differ, straddle)

"""The sglang release matrix (findings 2 and 3 per release) regenerates and matches the committed one.

``data/measured/cpu-2core/sglang_release_matrix.json`` is written by
``benchmarks/sglang_release_matrix.py`` (all eight releases 0.5.16 … 0.5.23: 1,054 s in the
committed run, see its meta file; ``make release-matrix``). Regenerating every row here is too slow for the
test tier, so by default this regenerates the two releases ``make sglang-env`` installs
(0.5.16 in .venv-sglang's site-packages, 0.5.23 in ``.venv-sglang/sglang-0.5.23``; ~1–2
minutes each) and compares them with the committed rows. ``K3LAB_RELEASE_MATRIX=all`` regenerates
every installed release (``make test-release-matrix``); ``K3LAB_RELEASE_MATRIX=0.5.17,0.5.19`` a chosen list. Other checks
read only the committed JSON: the facts below were read from each release's source
(cited), independently of the probe.
"""

from __future__ import annotations

import os

import pytest

from k3lab.probes import release_matrix as RM

DEFAULT_SUBSET = ("0.5.16", "0.5.23")


@pytest.fixture(scope="module")
def doc():
    return RM.load_matrix()


def _chosen(installed: list[str]) -> list[str]:
    want = os.environ.get("K3LAB_RELEASE_MATRIX", "")
    if want.strip() == "all":
        return installed
    if want.strip():
        return [v.strip() for v in want.split(",") if v.strip()]
    return [v for v in DEFAULT_SUBSET if v in installed]


def _rows_to_check():
    installed = RM.installed_releases()
    chosen = _chosen(installed)
    if not chosen:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason="no sglang release installed to regenerate (make sglang-env installs 0.5.16 "
                   "and 0.5.23; requirements/sglang-releases.txt lists the rest)"))]
    return chosen


@pytest.mark.parametrize("version", _rows_to_check())
def test_regenerated_row_equals_committed(doc, version):
    committed = RM.lookup(version, doc)
    assert committed.get("status") != "unknown", f"{version} is not in the committed matrix"
    row = RM.run_release(version, vocab=doc["vocab"])
    assert row == committed


def test_matrix_covers_every_pinned_release(doc):
    assert [r["sglang"] for r in doc["rows"]] == RM.requirements_versions()
    assert doc["mixes"] == list(RM._mixes())
    assert doc["platforms"] == list(RM.PLATFORMS)


@pytest.mark.parametrize("version", ["0.5.15.post1", "0.5.24", "9.9.9"])
def test_absent_release_is_unknown(doc, version):
    row = RM.lookup(version, doc)
    assert row["sglang"] == version and row["status"] == "unknown"
    assert RM.hip_verify_crashes(row) == "unknown"
    assert RM.aiter_refuses_12_heads(row) == "unknown"
    assert "bindings" not in row and "aiter" not in row     # nothing is inferred for it


def test_run_release_refuses_a_release_that_is_not_installed():
    with pytest.raises(RuntimeError, match="0.0.1 is not installed"):
        RM.run_release("0.0.1")


# --- facts read from the releases' source (cited), checked against the committed rows ------

def _row(doc, v):
    return RM.lookup(v, doc)


def test_hip_bindings_by_release(doc):
    # 0.5.16 dflash_utils.py: only `if is_cuda() or is_musa()` binds sgl_kernel; else None.
    assert _row(doc, "0.5.16")["bindings"]["hip"]["top_k_renorm_prob"] == "None"
    # 0.5.17 on: `elif is_hip():` imports both Triton wrappers from kernels/ops/sampling/renorm_triton.py
    for v in RM.requirements_versions()[1:]:
        b = _row(doc, v)["bindings"]["hip"]
        assert b["top_k_renorm_prob"] == "sglang.kernels.ops.sampling.renorm_triton.top_k_renorm_probs_triton"
        assert b["top_p_renorm_prob"] == "sglang.kernels.ops.sampling.renorm_triton.top_p_renorm_probs_triton"
    # 0.5.17 sets _DFLASH_SAMPLING_VERIFY_AVAILABLE = True on HIP without binding
    # tree_speculative_sampling_target_only (the #33694 bug); 0.5.18 no longer does.
    assert _row(doc, "0.5.17")["bindings"]["hip"]["_DFLASH_SAMPLING_VERIFY_AVAILABLE"] is True
    assert _row(doc, "0.5.17")["bindings"]["hip"]["tree_speculative_sampling_target_only"] == "not defined"
    assert _row(doc, "0.5.18")["bindings"]["hip"]["_DFLASH_SAMPLING_VERIFY_AVAILABLE"] is False


def test_hip_verify_crashes_only_in_0_5_16(doc):
    assert RM.hip_verify_crashes(_row(doc, "0.5.16")) is True
    crash = _row(doc, "0.5.16")["verify"]["hip"]["top_k=20 mixed with unrestricted"]
    assert crash["error"] == "TypeError: 'NoneType' object is not callable"
    assert not any(RM.hip_verify_crashes(_row(doc, v)) for v in RM.requirements_versions()[1:])


def test_cpu_fallback_masks_by_rank_from_0_5_18(doc):
    # 0.5.18 added _dflash_top_k_renorm_prob: torch.topk + rank mask when no kernel is bound.
    for v in ("0.5.16", "0.5.17"):
        assert RM.hip_verify_crashes({"verify": {"hip": _row(doc, v)["verify"]["cpu"]}}) is True
    for v in RM.requirements_versions()[2:]:
        dense = _row(doc, v)["verify"]["cpu"]["top_k=20 mixed with unrestricted"]
        assert dense["outcome"] == "ok" and dense["ties"] == "rank-mask"


def test_sparse_path_masks_by_rank_everywhere(doc):
    # build_*_verify_target_probs' sparse path: torch.topk(max_top_k) then a rank mask.
    for row in doc["rows"]:
        for plat in RM.PLATFORMS:
            r = row["verify"][plat]["top_k=20 and top_k=50"]
            assert (r["path"], r["ties"]) == ("sparse", "rank-mask")


def test_aiter_12_heads_by_release(doc):
    # 0.5.16–0.5.18: `assert _valid_heads` (4, 8, multiples of 16 in [16, 128]).
    for v in ("0.5.16", "0.5.17", "0.5.18"):
        a = _row(doc, v)["aiter"]
        assert RM.aiter_refuses_12_heads(_row(doc, v)) is True
        assert a["error_12"].startswith("AssertionError: Aiter MLA supports num_head of 4, 8, or multiples of 16")
        assert a["k3lab_patch"]["prefill_12"]["max_abs_diff_vs_with_head_padding"] == 0.0
    # 0.5.19 on: 12 in _mla_low_head_zero_pad → head_pad_mode "zero", 16 kernel heads.
    for v in RM.requirements_versions()[3:]:
        a = _row(doc, v)["aiter"]
        assert a["accepts_12"] and a["mode_12"]["head_pad_mode"] == "zero"
        assert a["mode_12"]["num_head_padded"] == 16
        assert a["prefill_12"]["max_abs_diff_vs_with_head_padding"] == 0.0
    # Every release: with no --attention-backend, sglang picks triton for 12 heads per rank on HIP
    # (server_args / model_override_base: aiter only for 16 or 128 KV heads per rank).
    for row in doc["rows"]:
        assert row["aiter"]["default_backend_on_hip"]["96 heads TP8 (12/rank)"] == "triton"


def test_kimi_k3_model_file_from_0_5_17(doc):
    assert _row(doc, "0.5.16")["kimi_k3"]["model_file"] is False
    for v in RM.requirements_versions()[1:]:
        assert "KimiK3ForConditionalGeneration" in _row(doc, v)["kimi_k3"]["entry_classes"]

"""The AITER head-pad patch against the real sglang 0.5.16 ``aiter_backend`` module, on CPU.

Real: sglang's module and AiterAttnBackend methods. Stand-ins (k3lab.probes.aiter_backend, labelled):
the model runner/config/layer/batch objects and the AITER kernels, which enforce AITER's
head-count rules and compute with k3lab's reference. AITER's own kernels cannot run here.
"""

import pytest
import torch

import k3lab_patches as patches
from k3lab_patches.aiter_head_pad import _MARK, PATCH

from k3lab import attention as A
from k3lab.probes import aiter_backend as H


@pytest.fixture(scope="module")
def mod():
    return H.backend_module()


@pytest.fixture
def patched(mod):
    PATCH.revert()
    done = PATCH.apply(patches.sglang_version())
    yield done
    PATCH.revert()


@pytest.fixture
def unpatched(mod):
    PATCH.revert()
    yield
    PATCH.revert()


def test_installed_version_is_the_known_one():
    assert patches.sglang_version() in PATCH.known_versions


def test_module_imports_without_aiter(mod):
    # the `from aiter import ...` is guarded; on CPU the names are simply absent
    assert not hasattr(mod, "mla_prefill_ps_asm_fwd") and hasattr(mod, "AiterAttnBackend")


def test_real_start_up_rule_equals_k3lab_rule(unpatched):
    got = {n for n in range(1, 145) if H.accepts(n, tp=1)[0]}
    assert got == {n for n in range(1, 145) if A.is_supported_heads(n)}


def test_unpatched_refuses_k3_at_tp8(unpatched):
    ok, msg = H.accepts(96, tp=8)
    assert not ok
    assert msg == "Aiter MLA supports num_head of 4, 8, or multiples of 16 in [16, 128]."


def test_apply_is_idempotent_and_reversible(mod, unpatched):
    cls = mod.AiterAttnBackend
    originals = {m: cls.__dict__[m] for m in ("__init__", "mla_fp8_prefill_attn", "_mla_decode_fwd_with_head_pad")}
    first = PATCH.apply(patches.sglang_version())
    assert sorted(first) == sorted(f"{H.MODULE}.AiterAttnBackend.{m}" for m in originals)
    assert PATCH.is_applied()
    assert PATCH.apply(patches.sglang_version()) == []          # second apply: nothing to do
    assert sorted(PATCH.revert()) == sorted(first)
    assert all(cls.__dict__[m] is f for m, f in originals.items())
    assert PATCH.revert() == []
    assert not H.accepts(96, tp=8)[0]                            # refused again after revert


def test_version_guard(unpatched):
    with pytest.raises(patches.UnsupportedSglangVersion, match="0.5.99 is not a release the matrix measured"):
        PATCH.apply("0.5.99")
    with pytest.raises(patches.UpstreamFixed, match="first in sglang 0.5.19"):
        PATCH.apply("0.5.19", force=True)
    with pytest.raises(patches.UnsupportedSglangVersion, match="force=True"):
        PATCH.apply("0.5.17")
    assert not PATCH.is_applied()
    assert PATCH.apply("0.5.17", force=True)  # still broken there (the matrix), the patch written for 0.5.16
    PATCH.revert()
    # unmeasured (a K3 branch image's version) and forced: the real 0.5.16 backend has what the wrappers call
    assert PATCH.apply("0.5.15.post1.dev20260723+g6c9fd0adc5", force=True)


def test_patched_backend_starts_with_16_kernel_heads(patched):
    backend, cfg = H.make_backend(96, tp=8)
    assert cfg.num_attention_heads == 96                         # the model config is untouched
    assert (backend.k3lab_real_heads, backend.k3lab_padded_heads) == (12, 16)
    assert (backend.num_head, backend.num_kv_head, backend.num_head_padded) == (16, 16, 16)
    assert backend.head_repeat_factor == 1


def test_patched_backend_leaves_supported_counts_alone(patched):
    backend, _ = H.make_backend(96, tp=6)                         # 16 heads per rank
    assert backend.num_head == 16 and not hasattr(backend, "k3lab_padded_heads")
    backend, _ = H.make_backend(32, tp=4)                         # 8: sglang's own repeat path
    assert backend.head_repeat_factor == 2 and not hasattr(backend, "k3lab_padded_heads")


def test_real_fp8_prefill_fails_on_12_heads_without_padding(mod, patched):
    backend, _ = H.make_backend(96, tp=8)
    si = H.StandIns()
    original = getattr(mod.AiterAttnBackend.mla_fp8_prefill_attn, _MARK)
    with H.installed(si):
        _, (q, k, v, cu, layer) = H.cold_prefill(backend, [5, 9], seed=1)
        with pytest.raises(RuntimeError, match="#heads: 12, head dimension: 128"):
            original(backend, q, k, v, layer)


@pytest.mark.parametrize("lens", [[5, 9], [1, 17, 3]])
def test_real_forward_extend_pads_and_slices_exactly(patched, lens):
    backend, _ = H.make_backend(96, tp=8)
    si = H.StandIns()
    with H.installed(si):
        out, (q, k, v, cu, layer) = H.cold_prefill(backend, lens, seed=2)
    assert si.prefill_heads == [16] and si.reduce_heads == [16]
    assert out.shape == (sum(lens), 12, 128) and out.dtype == torch.bfloat16
    assert torch.equal(out, H.fp8_reference(q, k, v, cu, layer.scaling))


def test_ps_metadata_is_built_for_16_heads(patched):
    backend, _ = H.make_backend(96, tp=8)
    si = H.StandIns()
    cu = torch.tensor([0, 5, 14], dtype=torch.int32)
    with H.installed(si):
        backend.make_mla_prefill_ps_meta_data(cu, cu, torch.tensor([5, 9]), *([None] * 6))
    assert si.ps_metadata == [(1, 16)]                           # GQA 1, 16 kv heads


def test_real_decode_wrapper_pads_to_16(mod, patched):
    backend, _ = H.make_backend(96, tp=8)
    si = H.StandIns()
    q = torch.randn(3, 12, 576).to(torch.bfloat16)
    layer = H.NS(v_head_dim=512, tp_q_head_num=12)
    with H.installed(si):
        o = backend._mla_decode_fwd_with_head_pad(q, None, layer)
        original = getattr(mod.AiterAttnBackend._mla_decode_fwd_with_head_pad, _MARK)
        with pytest.raises(RuntimeError, match="12 q heads"):
            original(backend, q, None, layer)
    assert si.decode_heads == [16]
    assert o.shape == (3, 12, 512)
    assert torch.equal(o, (2 * q[..., :512].float()).to(torch.bfloat16))


def test_patches_apply_registry(mod, unpatched):
    try:
        done = patches.apply()
        assert any(d.endswith("AiterAttnBackend.__init__") for d in done)
        assert not any("AiterAttnBackend" in d for d in patches.apply())   # idempotent
    finally:
        patches.revert()
    assert not PATCH.is_applied()

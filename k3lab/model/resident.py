"""Resident bytes outside k3lab's text-model inventory, and the peak while weights load.

What a Kimi K3 rank holds besides the text model's tensors (:mod:`k3lab.model.inventory`
counts those): the DFLASH/DSPARK draft model (:func:`dflash_draft_weight_bytes_per_rank`)
and the MoonViT vision tower with its projector, replicated on every rank
(:func:`moonvit_weight_bytes`); and what loading costs on top for a moment: one MoE
layer's MXFP4 tensors (:func:`mxfp4_moe_layer_bytes`), the transient of their post-load
repacking per backend (:func:`mxfp4_post_load_transient_bytes`) and the resulting
load-time peak (:func:`load_peak_bytes`).

Read from sglang 0.5.23 (PyPI wheel ``sglang-0.5.23``); every function names the sglang
code it mirrors. No sglang code is copied. Units: bytes, per rank.
"""

from __future__ import annotations

from ..data import check_count
from ._checks import check_size
from .quant import MXFP4_BLOCK

# --------------------------------------------------------------------------- weights outside the inventory


def dflash_draft_weight_bytes_per_rank(*, hidden_size: int, num_layers: int, num_heads: int,
                                       num_kv_heads: int, head_dim: int, intermediate_size: int,
                                       num_context_features: int, tp_size: int,
                                       vocab_size: int = 0, markov_rank: int = 0,
                                       confidence_head: bool = False,
                                       dtype_bytes: int = 2) -> int:
    """Resident bytes per rank of a dense DFLASH/DSPARK draft (Qwen3-style GQA layers).

    Mirrors 0.5.23 ``models/dflash.py`` ``DFlashDraftModel``/``DFlashAttention``/``DFlashMLP``
    (QKV and gate/up column-parallel, o/down row-parallel, KV heads replicated when fewer
    than ranks, q/k norms per head dim, two RMSNorms per layer) plus the replicated context
    projection ``fc`` (``num_context_features·hidden → hidden``, ``hidden_norm``, final
    ``norm``) and, from ``models/dspark.py``, the replicated ``VanillaMarkov`` head
    (``nn.Embedding(vocab, rank)`` + ``nn.Linear(rank, vocab)``) and the confidence head
    (``Linear(hidden + rank, 1)`` with bias). The draft shares the target's embedding and
    lm_head. Units: bytes. RadixArk/Kimi-K3-DSpark (hidden 7168, 5 layers, 64 × 64 heads,
    16 KV heads, FFN 14336, 5 target features, rank 256): 2,249,289,601 parameters at TP1
    (matching the published checkpoint's count); 579,432,321 per rank at TP8 = 1,158,864,642 B.
    """
    for name, v in (("hidden_size", hidden_size), ("num_layers", num_layers),
                    ("num_heads", num_heads), ("num_kv_heads", num_kv_heads),
                    ("head_dim", head_dim), ("intermediate_size", intermediate_size),
                    ("num_context_features", num_context_features), ("tp_size", tp_size)):
        check_count(name, v)
    check_size("vocab_size", vocab_size)
    check_size("markov_rank", markov_rank)
    if dtype_bytes not in (1, 2, 4):
        raise ValueError(f"dtype_bytes must be 1, 2 or 4, got {dtype_bytes!r}")
    if num_heads % tp_size:
        raise ValueError(f"tp_size={tp_size} does not divide the draft's {num_heads} heads")
    if intermediate_size % tp_size:
        raise ValueError(f"tp_size={tp_size} does not divide the draft FFN {intermediate_size}")
    if num_kv_heads >= tp_size and num_kv_heads % tp_size:
        raise ValueError(f"tp_size={tp_size} does not divide the draft's {num_kv_heads} KV heads")
    if num_kv_heads < tp_size and tp_size % num_kv_heads:
        raise ValueError(f"{num_kv_heads} KV heads cannot be replicated over tp_size={tp_size}")
    if (markov_rank > 0) != (vocab_size > 0):
        raise ValueError("a Markov head needs both vocab_size and markov_rank")
    h = hidden_size
    q = num_heads // tp_size * head_dim
    kv = max(1, num_kv_heads // tp_size) * head_dim
    inter = intermediate_size // tp_size
    layer = h * (q + 2 * kv) + q * h + 3 * h * inter + 2 * head_dim + 2 * h
    params = num_layers * layer + num_context_features * h * h + 2 * h
    params += 2 * vocab_size * markov_rank
    if confidence_head:
        params += h + markov_rank + 1
    return params * dtype_bytes


def moonvit_weight_bytes(*, num_layers: int, hidden_size: int, qkv_hidden_size: int,
                         intermediate_size: int, patch_size: int, pos_emb_height: int,
                         pos_emb_width: int, merge_kernel: tuple[int, int],
                         text_hidden_size: int, dtype_bytes: int = 2) -> int:
    """Resident bytes of Kimi K3's vision tower + projector, on EVERY rank (replicated).

    Mirrors 0.5.23 ``models/kimi_k3.py`` ``KimiK3ForConditionalGeneration.__init__``
    (``use_data_parallel = True``: "runs replicated (per-rank full weights)") and
    ``models/kimi_k3_vl.py`` ``KimiK3VisionTower`` / ``MoonViTEncoderLayer`` /
    ``KimiK3MultiModalProjector`` for the published K3 vision config (bias-free linears and
    patch conv, RMSNorms): patch conv ``3·p²·H``, learnable pos-emb ``h·w·H``, per layer
    ``wqkv H→3·qkv`` + ``wo qkv→H`` + MLP ``H→I→H`` + 2 norms, a final norm, projector
    ``(m·H)² + m·H·text_H`` + post norm (``m`` = merge area). Non-persistent buffers
    (sin-cos time table; the 2-D RoPE table built at the first image) are left out.
    Units: bytes. Kimi K3 (27 × 1024, qkv 1536, FFN 4096, 14-px patches, 64×64 pos-emb,
    2×2 merge → 7168): 447,358,976 parameters = 894,717,952 B in bf16.
    """
    for name, v in (("num_layers", num_layers), ("hidden_size", hidden_size),
                    ("qkv_hidden_size", qkv_hidden_size), ("intermediate_size", intermediate_size),
                    ("patch_size", patch_size), ("pos_emb_height", pos_emb_height),
                    ("pos_emb_width", pos_emb_width), ("text_hidden_size", text_hidden_size)):
        check_count(name, v)
    if (not isinstance(merge_kernel, tuple) or len(merge_kernel) != 2
            or any(isinstance(m, bool) or not isinstance(m, int) or m <= 0 for m in merge_kernel)):
        raise ValueError(f"merge_kernel must be a pair of positive integers, got {merge_kernel!r}")
    if dtype_bytes not in (2, 4):
        raise ValueError(f"dtype_bytes must be 2 or 4, got {dtype_bytes!r}")
    h = hidden_size
    layer = h * 3 * qkv_hidden_size + qkv_hidden_size * h + 2 * h * intermediate_size + 2 * h
    merged = merge_kernel[0] * merge_kernel[1] * h
    params = (3 * patch_size * patch_size * h + pos_emb_height * pos_emb_width * h
              + num_layers * layer + h
              + merged * merged + merged * text_hidden_size + text_hidden_size)
    return params * dtype_bytes


# --------------------------------------------------------------------------- load-time peak


def mxfp4_moe_layer_bytes(*, num_local_experts: int, hidden_size: int,
                          intermediate_per_partition: int) -> dict:
    """Bytes of one MoE layer's MXFP4 expert tensors on one rank, by tensor.

    Mirrors 0.5.23 ``layers/quantization/mxfp4.py`` ``Mxfp4MoEMethod.create_weights``:
    ``w13 [E, 2I, H/2]`` and ``w2 [E, H, I/2]`` uint8 (two E2M1 per byte), scales
    ``[E, 2I, H/32]`` and ``[E, H, I/32]`` uint8 (E8M0). ``hidden_size`` / ``intermediate``
    are the padded values the method uses (Kimi K3's latent 3584 and 3072/tp; no padding at
    TP8 on SM100 FlashInfer, Marlin, or AITER with ``SGLANG_AITER_K3_OPT=1``; AITER
    without it pads 384 → 512). The zero biases (bf16 ``[E, 2I]``, ``[E, H]``, created
    when not on ROCm) are returned separately. Units: bytes.
    """
    e = check_count("num_local_experts", num_local_experts)
    h = check_count("hidden_size", hidden_size)
    i = check_count("intermediate_per_partition", intermediate_per_partition)
    if h % MXFP4_BLOCK or i % MXFP4_BLOCK:
        raise ValueError(f"hidden_size ({h}) and intermediate_per_partition ({i}) must be "
                         f"multiples of the {MXFP4_BLOCK}-element MXFP4 block")
    return {"w13": e * 2 * i * h // 2, "w13_scale": e * 2 * i * h // MXFP4_BLOCK,
            "w2": e * h * i // 2, "w2_scale": e * h * i // MXFP4_BLOCK,
            "w13_bias_bf16": e * 2 * i * 2, "w2_bias_bf16": e * h * 2}


def mxfp4_post_load_transient_bytes(*, backend: str, num_local_experts: int, hidden_size: int,
                                    intermediate_per_partition: int,
                                    gate_up_interleaved: bool = False) -> int:
    """Extra bytes one MoE layer holds at the worst moment of its post-load repacking.

    sglang 0.5.23 repacks each MoE layer in ``layers/quantization/mxfp4.py``
    ``Mxfp4MoEMethod.process_weights_after_loading``, one layer at a time after all weights
    are loaded (``model_loader`` post-processing), so the load-time peak is the resident
    weights plus the largest single-layer transient. Per backend (``A`` = w13, ``a`` = its
    scale, ``B`` = w2, ``b`` = its scale, from :func:`mxfp4_moe_layer_bytes`):

    - ``"flashinfer_sm100"`` (B200/B300 ``flashinfer_mxfp4``, Kimi K3's SM100/103 default):
      the non-interleaved K3 layout is first re-ordered by an index gather (new ``A + a``),
      every expert is permuted into a Python list (``A + a + B + b``), then ``torch.stack``
      builds the final ``A`` while the originals, the re-ordered copy and the lists are all
      alive: peak extra ``3A + 2a + B + b`` (plus a few MiB of fp32 biases). The layer's zero
      biases end up fp32 (twice their bf16 bytes) — a steady-state change, not a transient.
    - ``"aiter"`` (ROCm with ``SGLANG_USE_AITER=1``): ``shuffle_weight``/``shuffle_weight_a16w4``
      (aiter ``ops/shuffle.py``: ``permute(...).contiguous()``) return one new tensor
      per weight and the old one is dropped on reassignment: peak extra ``A`` (w13 is the
      larger); scale shuffles are smaller. An interleaved layout (not K3) would first
      rewrite w13 in place through one extra ``A``-sized copy, which frees before the shuffle.
    - ``"deep_gemm"``: the weights are re-viewed in place; scales are rebuilt through an
      fp32 copy (``4a`` for w13) — peak extra ``4a + a``.

    Units: bytes (per rank, per layer).
    """
    sizes = mxfp4_moe_layer_bytes(num_local_experts=num_local_experts, hidden_size=hidden_size,
                                  intermediate_per_partition=intermediate_per_partition)
    a_, sa, b_, sb = sizes["w13"], sizes["w13_scale"], sizes["w2"], sizes["w2_scale"]
    if backend == "flashinfer_sm100":
        base = 2 * a_ + sa + b_ + sb  # lists (A+a+B+b) + final stack A
        if not gate_up_interleaved:
            base += a_ + sa  # the index-gather re-ordered copy, alive until the stack returns
        return base
    if backend == "aiter":
        return a_
    if backend == "deep_gemm":
        return 5 * sa
    raise ValueError(f"backend must be 'flashinfer_sm100', 'aiter' or 'deep_gemm', got {backend!r}")


def load_peak_bytes(*, resident_weights_bytes: int, largest_layer_transient_bytes: int,
                    other_post_load_transient_bytes: int = 0) -> int:
    """Peak bytes per rank during loading: resident weights + the largest transient.

    The post-load passes of 0.5.23 run layer by layer (MoE repacking in
    ``Mxfp4MoEMethod.process_weights_after_loading``; ``models/kimi_k3.py``
    ``KimiK3LinearForCausalLM.post_load_weights``: ``kv_b_proj`` → ``w_kc``/``w_vc`` copies,
    the merged front / KDA in-proj buffers), and the caching allocator reuses a freed
    layer's blocks for the next, so transients do not add up across layers: the peak is
    ``resident + max(transients)``. Units: bytes.
    """
    r = check_size("resident_weights_bytes", resident_weights_bytes)
    t = check_size("largest_layer_transient_bytes", largest_layer_transient_bytes)
    o = check_size("other_post_load_transient_bytes", other_post_load_transient_bytes)
    return r + max(t, o)

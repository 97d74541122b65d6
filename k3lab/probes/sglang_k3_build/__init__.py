"""Per-rank weight bytes from sglang 0.5.23's real Kimi K3 module, built on the meta device.

Runs in ``.venv-sglang`` with the second sglang (0.5.23, ``make sglang-env``) first on
``PYTHONPATH``, one child process per rank (:func:`run_probe` launches it). The child
instantiates ``sglang.srt.models.kimi_k3.KimiK3LinearForCausalLM`` under
``torch.device("meta")`` exactly as sglang's loader would for one rank of a layout, then
lists every parameter and buffer the rank holds (name, shape, dtype, numel, bytes as
stored: packed MXFP4 ``uint8`` weights and E8M0 ``uint8`` scales count one byte per
element). It also runs the model's own ``post_load_weights`` on the meta tensors and
reports what that adds (the MLA ``w_kc`` / ``w_vc`` copies) and the resident bytes with
shared storages counted once.

What it relies on in sglang 0.5.23 (read, not copied):

* ``srt/runtime_context.py``: ``publish(ServerArgs, role, ranks=SpawnRanks(world_rank))``
  derives the TP/PP/attention/MoE ranks (``derive_spawn_ranks``); group handles are
  supplied with ``get_parallel().override_permanently(...)`` (stand-in objects, as sglang's
  ``initialize_model_parallel`` would publish them; ``moe_tp_group`` / ``moe_ep_group`` are
  the very ``tp_group`` object when they span it); ``override_platform`` says which machine
  this is.
* the scheduler's start-up order (``distributed/bootstrap.py`` ``_init_parallel_groups``
  and ``init_layer_runtime``; ``weight_cache/daemon.py`` ``load``): ``initialize_moe_config``
  (``layers/moe/utils.py``: MoE runner / a2a backends), ``initialize_dp_attention``
  (``layers/dp_attention.py``: sets ``flags.dp.enabled``, which
  ``is_dp_attention_enabled()`` reads while the embedding is built),
  ``init_dp_gathered_buffer`` and ``initialize_layernorm_sp``.
* ``srt/arg_groups/model_overrides/kimi_k3.py`` ``_kimi_k3_moe_runner_overrides``: on
  SM100/103/107 with an ``mxfp4-pack-quantized`` checkpoint ``--moe-runner-backend auto``
  resolves to ``flashinfer_mxfp4``. On ROCm it stays ``auto`` and ``Mxfp4MoEMethod`` takes
  its AITER branch when ``SGLANG_USE_AITER=1``.
* ``srt/configs/model_config.py`` ``ModelConfig.from_server_args`` and
  ``srt/model_loader/loader.py`` ``_get_quantization_config``: the published
  compressed-tensors config becomes ``CompressedTensorsConfig`` (quant_format
  ``mxfp4-pack-quantized``); ``srt/models/kimi_k3.py`` ``KimiK3MoE.__init__`` swaps in
  ``Mxfp4Config(is_checkpoint_mxfp4_serialized=True)`` for the routed experts and builds
  the latent projections with ``quant_config=None`` unless the config declares
  ``supports_kimi_k3_quantized_latent_projections`` (only ``ExpertPackConfig``, GGUF, does).
* ``srt/layers/quantization/mxfp4.py`` ``Mxfp4MoEMethod.create_weights``: per-rank expert
  intermediate rounded up to 128 (SM100 + flashinfer_mxfp4) or to 256 / 128 (AITER, with
  ``SGLANG_AITER_K3_OPT`` unset / set); zero bf16 expert biases unless ``_is_hip``.
* ``srt/models/kimi_k3.py`` ``KimiK3LinearForCausalLM.post_load_weights``: ``w_kc`` /
  ``w_vc`` contiguous copies of each MLA layer's ``kv_b_proj`` (which stays resident);
  ``_merge_front_weights`` / ``_merge_bfa_weights`` re-point weights at merged buffers.

Platforms (a CPU box emulates them; see :data:`PLATFORMS`):

* ``cuda-sm100``: ``override_platform(is_cuda=True, is_sm100=True, device_sm=100, ...)``,
  and the module-level ``_is_cuda`` flags of the loaded ``sglang.*`` modules set True;
  ``torch.cuda.Stream`` is stubbed because ``KimiK3LinearModel.__init__`` creates three
  side streams off ROCm.
* ``rocm-aiter``: ``SGLANG_USE_AITER=1``, ``SGLANG_AITER_K3_OPT`` as asked; after import
  the module-level ``_is_hip`` / ``_use_aiter`` / ``_is_gfx95*`` / ``_aiter_k3_opt`` flags of
  every loaded ``sglang.*`` module are set as a gfx950 (MI355X) build computes them (the
  names flipped are reported), ``deepseek_v2._hip_moe`` is bound to
  ``deepseek_common/amd/deepseek_v2_hip_moe`` (``MoEGate`` reads it on HIP), and
  ``override_platform(is_hip=True, is_cuda=False)`` is installed.

Expert-parallel layouts: the dispatchers' communication libraries (DeepEP, MoRI) are not
installed here; :func:`~.emulation.stub_a2a_libraries` lets the dispatcher objects be constructed (they
hold no weights) and reports what it stubbed. On SM100 the K3 default runner
(``flashinfer_mxfp4``) cannot run under DeepEP in 0.5.23, so that layout uses
``--moe-runner-backend deep_gemm`` (:data:`EP_RUNNER`); the failure itself is recorded.

Not covered (a meta build cannot show them): the quant method's
``process_weights_after_loading`` (FlashInfer permutes / AITER shuffles, small fp32
per-expert SiTU parameters), ROCm post-load merges in ``kimi_k3_rocm_quant.py``, and any
transient copies made while loading.

CLI (in ``.venv-sglang``, 0.5.23 first on ``PYTHONPATH``)::

    python -m k3lab.probes.sglang_k3_build --tp 8 --pp 1 --rank 0 --platform rocm-aiter --aiter-k3-opt 1 --json
    python -m k3lab.probes.sglang_k3_build --tp 8 --ep-size 8 --moe-a2a-backend mori --platform rocm-aiter --json
    python -m k3lab.probes.sglang_k3_build --tp 8 --dp-size 8 --enable-dp-attention --platform cuda-sm100 --json

Layout of the package: :mod:`.layouts` (layouts, platforms, case keys), :mod:`.config` (the
published K3 config from ``data/model/kimi_k3_config.json``), :mod:`.emulation` (stand-in
groups, platform flags, a2a stubs) and :mod:`.child` (:func:`build_rank`, the command line
above) run in the child; :mod:`.runner` (:func:`run_probe`, :func:`probe_case`,
:func:`transcript`), :mod:`.records` (:func:`compact`, the committed form) and
:mod:`.comparison` (:func:`k3lab_name`: sglang name → k3lab inventory name;
:func:`compare`: per k3lab tensor, k3lab's rank bytes from
``k3lab.model.sharding.rank_rows`` vs sglang's) run in the parent.
"""

from __future__ import annotations

from .child import build_rank
from .comparison import (FUSED_GROUPS, NAME_MAP, cause, compare, k3lab_name, k3lab_rank_bytes, k3lab_rows,
                         k3lab_setting, k3lab_stage_bytes, sglang_group_bytes, sglang_rank_bytes)
from .config import QUANT_CONFIG_SOURCE
from .layouts import (A2A_BACKEND, BASE_ENV, EP_RUNNER, LAYOUTS, PLATFORM_CASES, PLATFORMS, RELEASE, Layout,
                      case_key, iter_cases)
from .records import compact, layer_kinds, pattern_of, rank_totals
from .runner import (EXPECTED_FAILURES, RANK_CHECKS, TRANSCRIPT, default_python, load_transcript, probe_case,
                     run_probe, transcript)

__all__ = ["RELEASE", "QUANT_CONFIG_SOURCE", "PLATFORMS", "BASE_ENV", "A2A_BACKEND", "EP_RUNNER", "Layout",
           "LAYOUTS", "PLATFORM_CASES", "case_key", "iter_cases", "build_rank", "default_python",
           "run_probe", "probe_case", "EXPECTED_FAILURES", "RANK_CHECKS", "transcript",
           "load_transcript", "TRANSCRIPT", "layer_kinds", "pattern_of", "compact", "rank_totals",
           "NAME_MAP", "FUSED_GROUPS", "k3lab_name", "k3lab_setting", "k3lab_rows", "k3lab_rank_bytes",
           "k3lab_stage_bytes", "sglang_group_bytes", "sglang_rank_bytes", "compare", "cause"]

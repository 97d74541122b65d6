"""Finding 4 cross-check: NVIDIA's aiconfigurator as an independent model of Kimi K3 serving.

aiconfigurator (PyPI ``aiconfigurator-core``, Apache-2.0, NVIDIA) estimates LLM serving
performance from per-kernel timings measured on real GPUs ("silicon" perf databases for
sglang / vLLM / TensorRT-LLM), or from a roofline of the system's hardware numbers
("SOL", speed of light). It ships its own Kimi K3 model (``moonshotai/Kimi-K3``: 69 KDA +
24 MLA layers, LatentMoE, optional DSpark draft) and its own memory / KV-cache model. This
package is the only place in k3lab that imports it; it turns the study's questions into
its calls and back into plain numbers with provenance.

What it gives (all per GPU unless named otherwise; bytes are bytes, GiB = 2**30 B,
latencies in ms, throughputs in **output tokens/s**):

- :func:`memory_estimate` → :class:`AicMemory`: weights, activations, NCCL and runtime
  reserves, the KV budget and what it holds (MLA tokens, KDA state per request), for one
  GPU of a TP×PP layout, with aiconfigurator's sglang memory rules.
- :func:`throughput` → :class:`AicThroughput`: output tok/s of the whole deployment at a
  client concurrency (``bench_serving --max-concurrency``), TTFT, TPOT.
- :func:`sweep` → a :class:`pandas.DataFrame` over layouts × concurrencies;
  :func:`peaks` → the best concurrency of each layout.
- :class:`HardwareSpec` / :func:`hardware_from_gpu`: a GPU described by its hardware
  numbers, so that a GPU aiconfigurator has no data for (MI355X) can be estimated in SOL
  mode, and B300 / B200 described the same way, so ratios compare like with like.
- :func:`config_differences`: where aiconfigurator's bundled K3 config differs from the
  published config in ``data/model/``.

Modes (aiconfigurator's ``DatabaseMode``):

- ``"silicon"``: measured kernel tables of a built-in system (``b300_sxm``, ``b200_sxm``,
  ``h200_sxm``, ``gb200``, ``gb300``…). Even here a few small ops (norms, element-wise
  ops, and KDA kernels on databases without K3 rows) are priced "empirical" or "sol"; the
  per-op source counts are returned in ``sources``.
- ``"hybrid"`` / ``"empirical"``: built-in systems only (they need the system's own
  measured utilisation; a described GPU raises ValueError).
- ``"sol"``: roofline of the hardware numbers, no measured data; works for built-in
  systems (their YAML numbers) and for :class:`HardwareSpec` descriptions.

Things aiconfigurator-core 0.12.0 does not model, surfaced as ValueError rather than
silently ignored: decode context parallelism (``dcp > 1``; its ``KimiK3Model`` raises
for ``cp_size > 1``); speculative-decoding acceptance (it prices a DSpark verify step of
``nextn + 1`` tokens; the accepted tokens per step, ``accept_len``, must be given).

Concurrency and scheduling: ``scheduler="static"`` (default) prices waves of
``concurrency`` requests that prefill together and decode ``osl`` tokens together, which
is what ``bench_serving`` with fixed lengths (``--random-range-ratio 1.0``) and
``--max-concurrency c`` settles into; ``scheduler="agg"`` uses aiconfigurator's
continuous-batching model (``run_agg``) with a prefill chunk of ``ctx_tokens``. With PP,
a concurrency ``c`` is split into micro-batches of ``ceil(c / pp)`` requests; tok/s =
``c × osl / request latency`` (aiconfigurator's own PP scaling assumes ``pp`` full
micro-batches, which over-counts when ``c < pp``).

Outputs are deterministic: the same inputs give the same numbers (timings are kept out
of the numbers, in ``elapsed_s`` and ``DataFrame.attrs``).

Layout: :mod:`~k3lab.crosscheck.systems` (the GPU as aiconfigurator sees it: a built-in
system or a :class:`HardwareSpec`, and the system YAMLs written for it),
:mod:`~k3lab.crosscheck.estimates` (:func:`memory_estimate`, :func:`throughput`,
:func:`sweep`, :func:`peaks`), :mod:`~k3lab.crosscheck.results` (what they return),
:mod:`~k3lab.crosscheck.configs` (aiconfigurator's K3 config vs the published one).
:mod:`~k3lab.crosscheck._aic` is the one place that imports aiconfigurator; the submodules
take its handles from there.
"""

from __future__ import annotations

from ._aic import TESTED_VERSION, TOOL, TOOL_VERSION
from .configs import aic_model_config, config_differences
from .estimates import (
    AIC_MODEL, DEFAULT_BACKEND_VERSION, DEFAULT_MAX_NUM_TOKENS, DSPARK_NEXTN, KV_DTYPES, SCHEDULERS,
    STUDY_CONCURRENCIES, STUDY_CONFIGS, memory_estimate, peaks, sweep, throughput)
from .results import AicMemory, AicThroughput
from .systems import (
    BACKENDS, GPU_TO_SYSTEM, MODES, HardwareSpec, hardware_from_gpu, supported_databases)

__all__ = ["TESTED_VERSION", "TOOL", "TOOL_VERSION", "AIC_MODEL", "DEFAULT_BACKEND_VERSION",
           "DEFAULT_MAX_NUM_TOKENS", "DSPARK_NEXTN", "MODES", "SCHEDULERS", "KV_DTYPES", "BACKENDS",
           "GPU_TO_SYSTEM", "STUDY_CONFIGS", "STUDY_CONCURRENCIES", "HardwareSpec", "hardware_from_gpu",
           "AicMemory", "AicThroughput", "supported_databases", "memory_estimate", "throughput", "sweep",
           "peaks", "aic_model_config", "config_differences"]

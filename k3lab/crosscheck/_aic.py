"""The one place k3lab imports aiconfigurator: its handles, its version, its log level."""

from __future__ import annotations

import importlib.metadata
import logging

try:  # the one place k3lab imports aiconfigurator
    import aiconfigurator_core  # noqa: F401  (the compiled engine; imported for its version)
    from aiconfigurator_core.sdk import common as _aic_common
    from aiconfigurator_core.sdk import perf_database as _aic_pdb
    from aiconfigurator_core.sdk.backends.factory import get_backend as _aic_get_backend
    from aiconfigurator_core.sdk.backends.sglang_backend import (
        derive_sglang_mem_fraction_static as _aic_sglang_mem_fraction,
    )
    from aiconfigurator_core.sdk.config import RuntimeConfig as _AicRuntimeConfig
    from aiconfigurator_core.sdk.config_builders import build_model_config as _aic_build_model_config
    from aiconfigurator_core.sdk.memory import kv_cache_budget_bytes as _aic_kv_cache_budget_bytes
    from aiconfigurator_core.sdk.models import get_model as _aic_get_model
    from aiconfigurator_core.sdk.models.helpers import (
        resolve_kimi_k3_moe_arch_mode as _aic_k3_moe_mode,
    )
except ImportError as _exc:  # one clear error, whatever part is missing
    raise ImportError(
        "k3lab.crosscheck needs NVIDIA's aiconfigurator estimator core, the PyPI package "
        "'aiconfigurator-core' (k3lab is tested with ==0.12.0): install it with "
        "`pip install aiconfigurator-core==0.12.0` "
        f"(import failed: {type(_exc).__name__}: {_exc})"
    ) from _exc

# Its warnings (e.g. "num_layers 93 is not divisible by pp_size 2") are about its own
# rounding, which the docstrings here state once; keep them out of notebooks and logs.
for _name in ("aiconfigurator_core", "aiconfigurator"):
    logging.getLogger(_name).setLevel(logging.ERROR)

#: The distribution this package was written and pinned against.
TESTED_VERSION = "0.12.0"
#: Installed version of ``aiconfigurator-core`` (recorded in every provenance).
TOOL = "aiconfigurator-core"
TOOL_VERSION = importlib.metadata.version(TOOL)

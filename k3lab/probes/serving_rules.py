"""Serving rules of released sglang code that decide which layouts the article could run
(``data/sglang_serving_rules.yaml``), checked against the real release.

Run in ``.venv-sglang`` with the release first on ``PYTHONPATH`` (or the site-packages
0.5.16): ``python -m k3lab.probes.serving_rules`` prints one JSON object, rule → bool, for
the sglang it imports. Each check calls or parses the release's own code, never a copy:

* ``dspark_pipeline_parallel``: ``srt/arg_groups/speculative_hook.py::_handle_dspark`` given
  a DSpark request with ``pp_size=2`` and no PD disaggregation — False when it refuses with
  its pipeline message; True when it gets as far as the same request with ``pp_size=1``;
* ``dspark_pipeline_parallel_pd_prefill``: the same with ``disaggregation_mode='prefill'``;
* ``split_attention_backends``: ``ServerArgs`` has ``prefill_attention_backend`` and
  ``decode_attention_backend`` (prefill and decode can run different attention backends);
* ``kimi_k3_dcp``: the release's ``srt/models/kimi_k3.py`` defines
  ``prepare_context_parallel_metadata_for_dcp`` on ``KimiK3LinearForCausalLM`` and
  ``ServerArgs`` has ``dcp_size`` (decode context parallelism for K3); False without a K3
  model file.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import types
from pathlib import Path

#: the message fragment sglang's DSpark pipeline check raises with
_PP_REFUSAL = "pp_size == 1"


class _Args(types.SimpleNamespace):
    """A DSpark request: the fields set here, None for every other field sglang reads."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def _dspark_args(pp_size: int, disaggregation_mode: str = "null"):
    return _Args(device="cuda", attn_dp_size=1, enable_dp_attention=False, enable_dp_lm_head=False,
                 moe_a2a_backend="none", attn_cp_size=1, speculative_moe_a2a_backend=None, pp_size=pp_size,
                 disaggregation_mode=disaggregation_mode, speculative_draft_model_path="draft",
                 model_path="target", revision=None, download_dir=None, _resolved_overrides=[])


def _outcome(pp_size: int, disaggregation_mode: str) -> str:
    from sglang.srt.arg_groups import speculative_hook

    try:
        speculative_hook._handle_dspark(_dspark_args(pp_size, disaggregation_mode))
    except Exception as e:  # noqa: BLE001 - recorded, compared below
        return f"{type(e).__name__}: {e}"
    return "ok"


def dspark_pipeline_parallel(pp_size: int = 2, disaggregation_mode: str = "null") -> bool:
    """Whether the release's DSpark argument handler lets ``pp_size`` through: it refuses
    with its pipeline message, or it stops exactly where the same request with
    ``pp_size=1`` stops (a later check on a field this probe leaves unset)."""
    got = _outcome(pp_size, disaggregation_mode)
    if _PP_REFUSAL in got:
        return False
    if got != _outcome(1, disaggregation_mode):
        raise RuntimeError(f"_handle_dspark stopped before its pipeline check: {got}")
    return True


def _server_arg_names() -> set[str]:
    from sglang.srt.server_args import ServerArgs

    if dataclasses.is_dataclass(ServerArgs):
        return {f.name for f in dataclasses.fields(ServerArgs)}
    return set(dir(ServerArgs))


def split_attention_backends() -> bool:
    return {"prefill_attention_backend", "decode_attention_backend"} <= _server_arg_names()


def kimi_k3_dcp() -> bool:
    import sglang

    path = Path(sglang.__file__).parent / "srt" / "models" / "kimi_k3.py"
    if not path.exists():
        return False
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "KimiK3LinearForCausalLM":
            names = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            return "prepare_context_parallel_metadata_for_dcp" in names and "dcp_size" in _server_arg_names()
    return False


CHECKS = {"dspark_pipeline_parallel": dspark_pipeline_parallel,
          "dspark_pipeline_parallel_pd_prefill": lambda: dspark_pipeline_parallel(2, "prefill"),
          "split_attention_backends": split_attention_backends,
          "kimi_k3_dcp": kimi_k3_dcp}


def measure() -> dict:
    from importlib.metadata import version

    import sglang

    return {"sglang": getattr(sglang, "__version__", None) or version("sglang"),
            "rules": {name: bool(fn()) for name, fn in CHECKS.items()}}


if __name__ == "__main__":
    print(json.dumps(measure(), sort_keys=True))

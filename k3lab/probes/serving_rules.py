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
  model file;
* ``ngram_speculative_decoding``: ``srt/speculative/spec_info.py``'s ``SpeculativeAlgorithm``
  has an ``NGRAM`` member and ``srt/speculative/ngram_worker.py``'s ``NGRAMWorker.draft_worker``
  does nothing but ``return None`` (no draft model: S11).
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

    fn = _class_method(Path(sglang.__file__).parent / "srt" / "models" / "kimi_k3.py", "KimiK3LinearForCausalLM",
                       "prepare_context_parallel_metadata_for_dcp")
    return fn is not None and "dcp_size" in _server_arg_names()


def _class_method(path: Path, cls: str, name: str):
    """The ``def name`` of ``class cls`` in the Python file ``path`` (an ast node), or None."""
    if not path.exists():
        return None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    return None


def ngram_speculative_decoding() -> bool:
    import sglang
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    if "NGRAM" not in SpeculativeAlgorithm.__members__:
        return False
    fn = _class_method(Path(sglang.__file__).parent / "srt" / "speculative" / "ngram_worker.py", "NGRAMWorker",
                       "draft_worker")
    body = [n for n in fn.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))] if fn else []
    return (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Constant)
            and body[0].value.value is None)


CHECKS = {"dspark_pipeline_parallel": dspark_pipeline_parallel,
          "dspark_pipeline_parallel_pd_prefill": lambda: dspark_pipeline_parallel(2, "prefill"),
          "split_attention_backends": split_attention_backends,
          "kimi_k3_dcp": kimi_k3_dcp,
          "ngram_speculative_decoding": ngram_speculative_decoding}


def measure() -> dict:
    from importlib.metadata import version

    import sglang

    return {"sglang": getattr(sglang, "__version__", None) or version("sglang"),
            "rules": {name: bool(fn()) for name, fn in CHECKS.items()}}


if __name__ == "__main__":
    print(json.dumps(measure(), sort_keys=True))

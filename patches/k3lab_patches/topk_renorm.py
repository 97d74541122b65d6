"""Bind k3lab's plain-PyTorch top-k / top-p renorm where the pinned sglang lacks them.

sglang 0.5.16's speculative verifier (``sglang/srt/speculative/dflash_utils.py``,
``build_dflash_verify_target_probs``, also called by DSpark's accept step in
``dspark_components/kernels/dspark_accept.py``) calls the module globals
``top_k_renorm_prob`` / ``top_p_renorm_prob``. They are imported from ``sgl_kernel`` on
CUDA/MUSA only; everywhere else (ROCm, and this CPU box) both are ``None``, so the dense
path raises ``TypeError: 'NoneType' object is not callable``. In the state the article hit
(sglang PR #32621: the HIP branch binds a Triton top-p kernel only) ``top_k_renorm_prob`` is
not defined at all, hence the ``NameError``.

:data:`PATCH` binds :func:`k3lab_patches.sampling.top_k_renorm_prob` / ``top_p_renorm_prob`` to
each of those names that is ``None`` or missing, and leaves a real kernel alone (a CUDA
build keeps FlashInfer's). ``apply`` is idempotent; ``revert`` restores exactly what was
there before (``None``, or no binding at all).
"""

from __future__ import annotations

import importlib

from . import check_version
from .lazy import LazyModule
from .preconditions import signature_gap

#: the renormalisation itself, imported on first call: it imports torch, which `status --version X` never needs
sampling = LazyModule(__package__ + ".sampling")

_MISSING = object()

# sglang version → (module, names) the patch binds. Read from the installed 0.5.16 source.
TARGETS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "0.5.16": (("sglang.srt.speculative.dflash_utils", ("top_k_renorm_prob", "top_p_renorm_prob")),),
}
_LATEST = "0.5.16"
# the function that calls those names, by the keywords it is called with (0.5.16's
# build_dflash_verify_target_probs): without it, binding the names fixes nothing
VERIFIER = ("build_dflash_verify_target_probs", ("next_token_logits", "sampling_info"))


def _k3lab_top_k_renorm_prob(probs, top_ks):
    """sglang's call shape: ``(probs [rows, vocab], top_ks int [rows], TOP_K_ALL = no limit)``."""
    return sampling.top_k_renorm_prob(probs, top_ks)


def _k3lab_top_p_renorm_prob(probs, top_ps):
    """sglang's call shape: ``(probs [rows, vocab], top_ps float [rows] in (0, 1])``."""
    return sampling.top_p_renorm_prob(probs, top_ps)


REPLACEMENTS = {"top_k_renorm_prob": _k3lab_top_k_renorm_prob,
                "top_p_renorm_prob": _k3lab_top_p_renorm_prob}


class TopKRenormPatch:
    """The Patch protocol of :mod:`k3lab_patches` for the top-k / top-p renorm names."""

    name = "topk_renorm"
    known_versions = frozenset(TARGETS)
    fixed_by = "sglang PR #32641: Triton top-k and top-p renorm bound on HIP"

    @staticmethod
    def broken(row: dict) -> bool:
        """The release matrix's verdict (:mod:`k3lab_patches.releases`): a request mix crashes
        the verify path on HIP."""
        return bool(row["topk_renorm"])

    def __init__(self):
        # "module.attr" → what was bound before apply (None, a callable, or _MISSING)
        self._saved: dict[str, object] = {}

    @property
    def applied(self) -> list[str]:
        return sorted(self._saved)

    def apply(self, version: str, force: bool = False) -> list[str]:
        """Bind the replacements in the installed sglang → the names newly bound.

        :func:`k3lab_patches.check_version` decides from the release matrix (a release that
        fixed the bug is refused; one the patch was not written for needs ``force``, and then
        the newest known version's targets are tried, and a module without the verifier
        that calls them, :data:`VERIFIER`, is refused in one line). Calling it again binds
        nothing new and returns ``[]``.
        """
        check_version(self, version, force)
        targets = TARGETS.get(version, TARGETS[_LATEST])
        done = []
        for mod_name, names in targets:
            try:
                mod = importlib.import_module(mod_name)
            except ImportError as e:
                raise RuntimeError(f"k3lab patch {self.name!r}: sglang {version} has no module "
                                   f"{mod_name} ({e}); this patch cannot apply") from e
            fn, params = VERIFIER
            gap = signature_gap(f"{mod_name}.{fn}", getattr(mod, fn, None), params, leading=False)
            if gap:
                raise RuntimeError(f"k3lab patch {self.name!r}: sglang {version}: {gap}; the patch binds "
                                   f"the renorm names that function calls, and refuses")
            for attr in names:
                key = f"{mod_name}.{attr}"
                current = mod.__dict__.get(attr, _MISSING)
                if current is REPLACEMENTS[attr] or key in self._saved:
                    continue  # already ours
                if current is not None and current is not _MISSING:
                    continue  # a real kernel is bound (e.g. sgl_kernel on CUDA): keep it
                self._saved[key] = current
                setattr(mod, attr, REPLACEMENTS[attr])
                done.append(key)
        return done

    def revert(self) -> list[str]:
        """Restore every binding :meth:`apply` replaced → the names restored."""
        restored = []
        for key in sorted(self._saved):
            mod_name, attr = key.rsplit(".", 1)
            mod = importlib.import_module(mod_name)
            before = self._saved[key]
            if before is _MISSING:
                mod.__dict__.pop(attr, None)
            else:
                setattr(mod, attr, before)
            restored.append(key)
        self._saved.clear()
        return restored


PATCH = TopKRenormPatch()

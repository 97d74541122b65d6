"""Platform emulation in the child: re-resolve sglang's renorm bindings as on CUDA, HIP or CPU.

Everything runs on CPU. :func:`emulated_platform` emulates a platform with the checks the
renorm modules use at import time: the functions ``is_cuda`` / ``is_hip`` / ``is_musa`` /
``is_npu`` of ``sglang.srt.utils`` (and of ``sglang.srt.utils.common``, where they are
defined) are replaced by constants, and in releases that have it sglang's own
``runtime_context.override_platform(is_cuda=…, is_hip=…)`` is installed too (it answers
``get_platform()`` readers; the renorm modules do not read it). Then the
platform-resolving modules are executed again into fresh module objects (not
``importlib.reload``, which would keep names a branch does not bind)
(``kernels/ops/sampling/renorm.py`` and ``kernels/ops/speculative/verify_sampling.py``
where they exist, then ``dflash_utils``), so their ``if is_cuda(): … elif is_hip(): …``
import blocks run again. Everything else is imported once, on CPU. On exit the constants
are removed and the modules executed again.

Stand-ins (k3lab's, labelled, never sglang's or FlashInfer's): compiled kernels that
cannot load on a CPU box. ``sgl_kernel`` (CUDA wheel, ≤ 0.5.20) and ``flashinfer.sampling``
(0.5.21 on) are put in ``sys.modules`` as stand-in modules whose renorm functions are
:func:`k3lab.sampling.top_k_renorm_prob` / ``top_p_renorm_prob`` (FlashInfer semantics);
their ``tree_speculative_sampling_target_only`` raises.

sglang is imported inside the functions here, never at module level: this package must
import without sglang (the parent side), and in the child the sglang to import is the
release that ``PYTHONPATH`` selected.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import types

from ... import sampling
from ..topk_repro import DFLASH
from .record import _MISSING

PLATFORMS = ("cuda", "hip", "cpu")
PLATFORM_PROBES = ("is_cuda", "is_hip", "is_musa", "is_npu")
PLATFORM_FLAGS = {
    "cuda": {"is_cuda": True, "is_hip": False, "is_musa": False, "is_npu": False},
    "hip": {"is_cuda": False, "is_hip": True, "is_musa": False, "is_npu": False},
    "cpu": {"is_cuda": False, "is_hip": False, "is_musa": False, "is_npu": False},
}
# Modules whose import-time platform branches decide the renorm bindings, in reload order.
PLATFORM_MODULES = ("sglang.kernels.ops.sampling.renorm",
                    "sglang.kernels.ops.speculative.verify_sampling", DFLASH)


@contextlib.contextmanager
def swapped(namespace: dict, values: dict):
    """Bind ``values`` in ``namespace`` (a module's ``__dict__``, or ``sys.modules``); on exit
    put the old entries back and remove those that were absent."""
    saved = {n: namespace.get(n, _MISSING) for n in values}
    try:
        namespace.update(values)
        yield namespace
    finally:
        for n, old in saved.items():
            if old is _MISSING:
                namespace.pop(n, None)
            else:
                namespace[n] = old


def _stand_in(real: str, fn):
    """A k3lab function standing in for the compiled kernel ``real`` (labelled)."""
    def stand_in(probs, arg, *args, **kwargs):
        return fn(probs, arg)

    stand_in.__name__ = real.rsplit(".", 1)[-1]
    stand_in.__qualname__ = stand_in.__name__
    stand_in.__module__ = "k3lab.probes.release_matrix"
    stand_in.k3lab_stand_in_for = real
    return stand_in


def _raising_stand_in(real: str):
    def stand_in(*args, **kwargs):
        raise RuntimeError(f"k3lab stand-in for {real}: the compiled kernel is absent on CPU")

    stand_in.__name__ = real.rsplit(".", 1)[-1]
    stand_in.k3lab_stand_in_for = real
    return stand_in


def _stand_in_modules() -> dict[str, types.ModuleType]:
    sk = types.ModuleType("sgl_kernel")
    sk.__doc__ = "k3lab stand-in for the sgl_kernel wheel (CPU box: the real one cannot load)"
    sk.top_k_renorm_prob = _stand_in("sgl_kernel.top_k_renorm_prob", sampling.top_k_renorm_prob)
    sk.top_p_renorm_prob = _stand_in("sgl_kernel.top_p_renorm_prob", sampling.top_p_renorm_prob)
    sk.tree_speculative_sampling_target_only = _raising_stand_in(
        "sgl_kernel.tree_speculative_sampling_target_only")
    fi = types.ModuleType("flashinfer")
    fi.__doc__ = "k3lab stand-in for flashinfer (CPU box)"
    fi.__path__ = []
    fs = types.ModuleType("flashinfer.sampling")
    fs.top_k_renorm_probs = _stand_in("flashinfer.sampling.top_k_renorm_probs",
                                      sampling.top_k_renorm_prob)
    fs.top_p_renorm_probs = _stand_in("flashinfer.sampling.top_p_renorm_probs",
                                      sampling.top_p_renorm_prob)
    fi.sampling = fs
    return {"sgl_kernel": sk, "flashinfer": fi, "flashinfer.sampling": fs}


@contextlib.contextmanager
def emulated_platform(name: str):
    """Re-resolve the renorm bindings as on ``name`` (see the module doc) → the verify module."""
    import sglang.srt.utils as U         # child: the release PYTHONPATH selected
    import sglang.srt.utils.common as C

    _import_on_this_machine()            # everything else imports once, on the real (CPU) platform
    flags = PLATFORM_FLAGS[name]
    try:
        with contextlib.ExitStack() as undo:
            for mod in (U, C):
                undo.enter_context(swapped(mod.__dict__, {fn: (lambda v=value: v)
                                                          for fn, value in flags.items()}))
            if name == "cuda":
                undo.enter_context(swapped(sys.modules, _stand_in_modules()))
            try:                         # after the constants are set (a first import sees them)
                from sglang.srt.runtime_context import override_platform
            except ImportError:
                override_platform = None
            if override_platform is not None:
                override = override_platform(is_cuda=flags["is_cuda"], is_hip=flags["is_hip"])
                override.install()
                undo.callback(override.restore)
            yield _reload_platform_modules()
    finally:
        _reload_platform_modules()


def _import_on_this_machine() -> None:
    for name in PLATFORM_MODULES:
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def _fresh_exec(name: str):
    """Execute module ``name`` anew into a fresh module object and install it in sys.modules.

    Not ``importlib.reload``: a reload re-runs the code in the old namespace, so a name the
    new platform branch never binds would keep its old value instead of being undefined.
    """
    spec = importlib.util.find_spec(name)
    old = sys.modules.get(name)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        if old is not None:
            sys.modules[name] = old
        raise
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, mod)
    return mod


def _reload_platform_modules():
    for name in PLATFORM_MODULES:
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            _fresh_exec(name)
    return sys.modules[DFLASH]

"""Notebook parameters: declared once, checked however the notebook is run.

A notebook's first code cell is tagged ``parameters`` and holds defaults only. Its second
cell calls :func:`check` with ``globals()``. ``check`` reads the kernel's input history
(IPython's ``In``) to find

- the parameters cell (the cell that starts with :data:`MARKER`): the declared names and
  their default values, parsed with ``ast``, and
- papermill's injected cell (it starts with ``# Parameters``), if any: the names given.

A name given but not declared, or a value whose type differs from its default's (an int is
fine for a float; ``None`` defaults accept anything of the documented kind via ``types``),
raises :class:`ParameterError` — a one-line message — whether the notebook runs under
``make reproduce``, ``papermill`` directly, nbval or JupyterLab. Nothing here relies on the
runner: papermill alone only warns about unknown names.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import reprlib

from . import limits, paths

MARKER = "# k3lab parameters"
PAPERMILL_MARKER = "# Parameters"
RUN_ENV = "K3LAB_RUN"  # set by the pipeline for a what-if profile: its name


class ParameterError(ValueError):
    """A notebook parameter that is unknown or of the wrong type."""


def _not_finite_call(node) -> bool:
    """``float('nan')`` / ``float("-inf")`` anywhere in ``node``: how papermill writes a NaN or an
    infinity (``-p mem_fraction nan``), which no literal spells."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "float"
               and len(n.args) == 1 and isinstance(n.args[0], ast.Constant)
               and str(n.args[0].value).strip().lower().lstrip("+-") in ("nan", "inf", "infinity")
               for n in ast.walk(node))


def _assignments(source: str, given: bool = False) -> dict:
    """The ``name = literal`` lines of a cell; ``given``: papermill's injected cell (the values
    given), else the parameters cell (the defaults)."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            try:
                out[name] = ast.literal_eval(node.value)
            except ValueError:
                if _not_finite_call(node.value):
                    raise ParameterError(f"parameter {name!r}: nan and inf are not accepted (a finite number "
                                         f"only), got {ast.get_source_segment(source, node.value)}") from None
                raise ParameterError(f"parameter {name!r}: " + ("its value must be a literal (a number, string, "
                                     "list or mapping)" if given else "its default must be a literal")) from None
    return out


def declared(history: list[str]) -> tuple[dict, dict]:
    """(declared defaults, injected values) from the input history of a kernel."""
    params = [s for s in history if s.lstrip().startswith(MARKER)]
    if not params:
        raise ParameterError(f"no parameters cell found (a cell starting with {MARKER!r})")
    defaults = _assignments(params[-1])
    injected = {}
    for s in history:
        if s.lstrip().startswith(PAPERMILL_MARKER):
            injected.update(_assignments(s, given=True))
    return defaults, injected


def _type_ok(default, value) -> bool:
    if default is None:
        return True
    if value is None:
        return False
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    return isinstance(value, type(default))


def _not_finite(v) -> bool:
    """A NaN or infinity anywhere in ``v`` (a number, list or mapping)."""
    if isinstance(v, float):
        return not math.isfinite(v)
    if isinstance(v, dict):
        return any(_not_finite(x) for x in v.values())
    return isinstance(v, (list, tuple)) and any(_not_finite(x) for x in v)


def _shape_error(default, value) -> str | None:
    """Why a list ``value`` cannot stand for its non-empty ``default``, or None."""
    if not isinstance(default, (list, tuple)) or not default:
        return None
    if not value:
        return f"must not be empty (its default has {len(default)} entries)"
    kinds = {type(x) for x in default}
    if len(kinds) == 1 and not all(_type_ok(default[0], x) for x in value):
        return f"must hold {kinds.pop().__name__} entries like its default {default!r}"
    return None


def validate(defaults: dict, given: dict) -> dict:
    """Check ``given`` against ``defaults`` → the full parameter set (defaults overridden):
    names, types, finite numbers, no empty list for a non-empty default, and the values of
    the parameters :mod:`k3lab.param_values` knows."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ParameterError(f"unknown parameter(s) {unknown}; this notebook declares: {sorted(defaults)}")
    for k, v in given.items():
        if not _type_ok(defaults[k], v):
            raise ParameterError(f"parameter {k!r} must be {type(defaults[k]).__name__} "
                                 f"(like its default {defaults[k]!r}), got {reprlib.repr(v)}")
        if _not_finite(v):
            raise ParameterError(f"parameter {k!r} must be a finite number, got {reprlib.repr(v)}")
        if isinstance(v, (list, tuple, dict)):  # before anything walks it: a 200,000-entry list killed the kernel
            try:
                limits.check("entries", len(v), f"parameter {k!r}: its number of entries")
            except ValueError as e:
                raise ParameterError(str(e)) from None
        why = _shape_error(defaults[k], v)
        if why:
            raise ParameterError(f"parameter {k!r} {why}, got {reprlib.repr(v)}")
    params = {**defaults, **given}
    from . import param_values  # imports the data loader: only once the types are right

    try:
        param_values.check(params)
    except param_values.DataError:
        raise  # a broken data file is the news, not the parameter that read it
    except ValueError as e:
        raise ParameterError(str(e)) from None
    return params


class Params(dict):
    """A notebook's checked parameters (name → value), with its declared ``defaults``."""

    def __init__(self, values: dict, defaults: dict):
        super().__init__(values)
        self.defaults = dict(defaults)

    @property
    def changed(self) -> dict:
        """The parameters that change *what* is computed (not mode / smoke) and differ from
        their defaults: empty when the notebook answers the article's own questions."""
        return {k: v for k, v in self.items() if k not in STUDY_KEYS and v != self.defaults.get(k)}

    @property
    def what_if(self) -> bool:
        return bool(self.changed)

    def results_dir(self, notebook_id: str):
        """Where this run's outputs go: ``results/<nb>`` for the article's questions (the
        pipeline points ``results`` at its staging folder); a what-if run run by hand goes to
        ``results/runs/<name>/<nb>``, never over the study's results."""
        try:
            if not self.what_if or pipeline_run():
                return paths.results_dir(notebook_id)
            run = paths.results_root() / "runs" / run_name(self.changed)
            claim_by_hand(run)
            d = run / notebook_id
            paths.refuse_a_link(d)
        except ParameterError:
            raise
        except ValueError as e:  # a symlink in a notebook folder's place: one line, nothing written
            raise ParameterError(str(e)) from None
        d.mkdir(parents=True, exist_ok=True)
        return d


def claim_by_hand(folder) -> None:
    """A notebook run by hand writes only into a results folder k3lab owns, by the rule
    ``reproduce`` applies (:func:`k3lab.transaction.claim`: made by k3lab or empty, never the
    repository, never a folder of someone else's files); ParameterError (one line) otherwise.
    The pipeline's kernel writes into its own marked staging folder and needs no claim."""
    from .manifest import PipelineError
    from .transaction import claim

    try:
        claim(folder)
    except PipelineError as e:
        raise ParameterError(f"a notebook run by hand: {e}") from None


STUDY_KEYS = ("mode", "smoke")


def notebook_parameters_cell(notebook_id: str, notebooks_dir=None) -> str:
    """The source of the parameters cell of ``notebooks/<notebook_id>.ipynb``."""
    path = (paths.NOTEBOOKS_DIR if notebooks_dir is None else notebooks_dir) / f"{notebook_id}.ipynb"
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError) as e:
        raise ParameterError(f"cannot read the parameters cell of {path.name}: {e}") from None
    for c in cells:
        src = "".join(c.get("source", "")) if isinstance(c.get("source"), list) else c.get("source", "")
        if c.get("cell_type") == "code" and src.lstrip().startswith(MARKER):
            return src
    raise ParameterError(f"{path.name}: no parameters cell found (a cell starting with {MARKER!r})")


def check(namespace: dict, notebook_id: str | None = None) -> Params:
    """Validate the running notebook's parameters (call with ``globals()``) → :class:`Params`.

    The declared defaults come from the kernel's input history (JupyterLab, papermill: the
    parameters cell and papermill's injected cell are there). A runner that executes cells
    without storing history (nbval) leaves none: then the defaults are read from
    ``notebooks/<notebook_id>.ipynb`` itself and nothing counts as injected. GPU and model names
    are lower-cased in ``namespace`` too (:func:`k3lab.param_values.normalised`), as the check read them."""
    history = namespace.get("In")
    if not isinstance(history, list):
        raise ParameterError("k3lab.nbparams.check must run inside a notebook kernel (no input history)")
    if not any(s.lstrip().startswith(MARKER) for s in history) and notebook_id is not None:
        history = [notebook_parameters_cell(notebook_id)]
    defaults, injected = declared(history)
    params = validate(defaults, injected)
    if params.get("mode") not in ("offline", "live"):
        raise ParameterError(f"parameter 'mode' must be 'offline' or 'live', got {params.get('mode')!r}")
    if not pipeline_run():  # before the notebook writes anything (05 writes the ledger at the root)
        claim_by_hand(paths.results_root())
    from .param_values import normalised

    values = normalised({k: namespace.get(k, v) for k, v in params.items()})
    for k, v in values.items():  # the names the check accepted, as the code takes them (MI355X → mi355x)
        if k in namespace and namespace[k] != v:
            namespace[k] = v
    return Params(values, defaults)


def pipeline_run() -> str | None:
    """The profile of the ``reproduce`` run this kernel executes for, or None for a notebook run
    by hand. The pipeline sets ``$K3LAB_RUN`` and points ``$K3LAB_RESULTS`` at its marked staging
    folder; ``$K3LAB_RUN`` alone (exported in a shell) is no run, and a what-if notebook run by
    hand under it still goes to ``results/runs/`` instead of over the study's results."""
    from .transaction import STAGING_MARK

    name = os.environ.get(RUN_ENV)
    root = paths.results_root()
    return name if name and root.name.startswith(".staging-") and (root / STAGING_MARK).is_file() else None


def run_name(changed: dict) -> str:
    """A folder name for a what-if run: the pipeline's profile (:func:`pipeline_run`), or a
    short, stable digest of the changed parameters when a notebook is run by hand."""
    env = pipeline_run()
    if env:
        return env
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"adhoc-{digest}"

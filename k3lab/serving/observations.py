"""Public measurements → what the serving model can be compared with (observations).

Each entry of ``data/public_measurements.yaml`` either becomes an :class:`Observation` — a
deployment, a workload, a speculative setting, a model output and the number it should equal,
in the model's units — or is left out with the reason (:func:`normalise`). The rules, in the
order they are applied (the first that fails names the reason):

1. the figure is current (not withdrawn or superseded) and not set aside in the data
   (``use: false`` with ``why``: prefix-reusing or trace workloads, disaggregated serving,
   duplicates, quantised checkpoints — what the fields alone cannot show);
2. its GPU belongs to a family of ``data/serving_model.yaml`` with facts in
   ``data/hardware.yaml``, and its engine is one the model knows (sglang, vLLM, ATOM, TokenSpeed:
   :mod:`k3lab.serving.engines`);
3. its metric is one the model predicts: output or total tok/s, TPOT (also ITL and tok/s per
   user, = 1000 / TPOT), TTFT; not a tail statistic (p90…);
4. its workload is stated: GPUs, TP, input and output lengths, concurrency; an ambiguous one
   (or an ambiguous metric or scope) only with the entry's ``reading``; a TTFT at concurrency 1
   needs no output length (one request's first token comes from its prefill alone);
5. its speculative setting is known: off, or DSpark with a stated acceptance length (a TTFT at
   concurrency 1 needs no acceptance length: it is read as the prefill, DSpark off);
6. its lengths are of a stated distribution (fixed, or uniform with its range ratio: natural-text
   prompts are not);
7. its layout is one the model covers: TP (× PP) replicas, EP over the TP group, DCP dividing
   TP; no DP attention or expert groups spanning replicas.

Each observation carries its engine with the admission the run stated (``max_running_requests``,
``max_batched_tokens``, ``mem_fraction``) and its harness (arrival process and length
distribution; where the entry states neither, its engine's usual harness, :func:`harness_of`): the
model times it in the regime they give (:mod:`k3lab.serving.regimes`).

Normalisation to the model's units (exact for fixed lengths; for uniform ones the model takes the
mean lengths, :func:`k3lab.serving.engines.mean_lengths`): total tok/s × O / (I + O) = output tok/s; a
per-GPU figure × GPUs, a per-node one × nodes, a per-stream output rate × concurrency = the
deployment's; a median inter-token latency is one decode step (``itl_ms``: the cohort's
prefill stalls are a few long gaps that a median skips), a mean ITL is read as TPOT; tok/s per
user → TPOT = 1000 / value.
TTFT is ``ttft_ms`` at any concurrency (the regime says what a request waits for).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import data
from ..specs import Deployment
from .engines import ENGINES, Engine, Harness, usual_harness
from .model import Spec, Workload

#: model outputs an observation can be compared with
KINDS = ("output_tok_s", "tpot_ms", "itl_ms", "ttft_ms")
WORKLOAD_FIELDS = ("gpu", "num_gpus", "tp", "input_len", "output_len", "concurrency", "metric", "scope", "spec")
TAIL_STATISTICS = ("p90", "p95", "p99", "max", "min")
#: what the model is validated on, each with its own band: decode speed without speculation (TPOT,
#: ITL, output tok/s), time to first token (any speculative setting), and speed with DSpark
METRICS = ("decode", "ttft", "dspark")


def metric_of(kind: str, spec_on: bool) -> str:
    """The :data:`METRICS` group of a model output ``kind`` (:data:`KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"unknown model output {kind!r}; known: {', '.join(KINDS)}")
    return "ttft" if kind == "ttft_ms" else ("dspark" if spec_on else "decode")


@dataclass(frozen=True)
class Observation:
    """One public figure in the model's terms. ``value`` in the unit of ``kind``
    (output tok/s for the whole deployment, or ms); ``raw`` the entry it came from."""

    id: str
    source: str
    family: str
    gpu: str
    engine: str
    deployment: Deployment
    workload: Workload
    spec: Spec
    kv_dtype: str
    kind: str
    value: float
    variants: tuple = ()
    normalisation: str = ""
    #: the figure's date (YYYY-MM-DD or coarser; the source's where the entry has none), or None
    date: str | None = None
    #: the MLA prefill attention kernel the run used (:data:`k3lab.serving.model.PREFILL_ATTENTION`)
    prefill_attention: str = "fast"
    #: the engine build the source states (image tag, release, commit), verbatim
    build: str = ""
    #: who measured it (:func:`origin_of`): what leave-one-source-out leaves out together
    origin: str = ""
    #: the engine and the admission the run stated (:class:`k3lab.serving.engines.Engine`)
    engine_settings: Engine = Engine()
    #: how the harness sent requests (:class:`k3lab.serving.engines.Harness`) and its name (or "not stated")
    harness: Harness = Harness()
    harness_name: str = "not stated"
    #: the statistic the figure is (mean, median; None: not stated)
    statistic: str | None = None

    @property
    def metric(self) -> str:
        """The validation metric the figure belongs to (:data:`METRICS`)."""
        return metric_of(self.kind, self.spec.on)


@dataclass(frozen=True)
class Excluded:
    id: str
    source: str
    gpu: str | None
    metric: str
    reason: str


def family_of(gpu: str | None) -> str | None:
    """The serving family of a GPU key (``data/serving_model.yaml`` ``families``), or None."""
    for name, f in data.load("serving_model").families.items():
        if gpu in f.gpus:
            return name
    return None


def _layout(m) -> tuple[Deployment | None, str]:
    """The :class:`Deployment` of an entry, or (None, why not)."""
    hw = data.load("hardware").gpus
    if m.gpu not in hw:
        return None, f"no hardware facts for {m.gpu} in data/hardware.yaml"
    if m.dp not in (None, 1):
        return None, f"DP attention / data-parallel ranks (dp={m.dp}) are not modelled"
    pp = m.pp or 1
    if m.num_gpus % (m.tp * pp):
        return None, f"{m.num_gpus} GPUs are not whole TP{m.tp}×PP{pp} replicas"
    if m.ep not in (None, 1, m.tp):
        return None, f"EP{m.ep} spans more than one TP{m.tp} group"
    dcp = m.dcp or 1
    if m.tp % dcp:
        return None, f"DCP{dcp} does not divide TP{m.tp}"
    try:
        dep = Deployment(m.gpu, m.num_gpus, m.tp, pp, dcp=dcp, ep=bool(m.ep and m.ep > 1))
    except ValueError as e:
        return None, str(e)
    return dep, ""


def _variants(m) -> tuple:
    """sglang switches an entry records (``sglang_env``, read from the source's recipe, launch
    command or image; k3lab.schemas.public): ``SGLANG_AITER_K3_OPT: "1"`` → ``aiter-k3-opt``.
    ``"0"`` and an unknown (``null``) setting run sglang's ROCm default (AITER's 256-aligned expert
    padding), which is what such a server holds unless the switch is set."""
    return ("aiter-k3-opt",) if (m.sglang_env or {}).get("SGLANG_AITER_K3_OPT") == "1" else ()


def normalise(m, held_out: bool = False) -> Observation | Excluded:
    """One measurement (a validated :class:`k3lab.schemas.public.Measurement`) → an
    :class:`Observation`, or :class:`Excluded` with the first rule it fails. ``held_out``: read a
    figure set aside as ``held_out`` as if it were usable (to measure the model on it, never to fit)."""
    def out(reason):
        return Excluded(m.id, m.source, m.gpu, m.metric, reason)

    if m.status != "current":
        return out(f"{m.status}: {m.status_note}")
    if not m.use and not (held_out and m.why_kind == "held_out"):
        return out(m.why)
    fam = family_of(m.gpu)
    if fam is None:
        return out(f"GPU {m.gpu or 'not stated'} is in no serving family")
    if m.engine not in ENGINES:
        return out(f"engine {m.engine or 'not stated'} is not modelled")
    if m.metric not in ("output_tok_s", "total_tok_s", "tpot_ms", "itl_ms", "tok_s_per_user", "ttft_ms"):
        return out(f"metric {m.metric} is not a model output")
    if m.statistic in TAIL_STATISTICS:
        return out(f"a tail statistic ({m.statistic})")
    alone = m.metric == "ttft_ms" and m.concurrency == 1  # one request's TTFT: its prefill alone
    missing = [k for k in ("num_gpus", "tp", "input_len", "output_len", "concurrency") if getattr(m, k) is None
               and not (alone and k == "output_len")]
    if missing:
        return out(f"workload not stated: {', '.join(missing)}")
    amb = [k for k in WORKLOAD_FIELDS if k in m.ambiguous and k != "spec"]
    if amb and not m.reading:
        return out(f"ambiguous {amb[0]}: {m.ambiguous[amb[0]]}")
    alg = m.spec.algorithm
    if alone and alg not in (None, "none") and m.spec.accept_length is None:
        alg = "none"  # a lone request's prefill: the draft's acceptance does not enter it
    if alg is None or ("spec" in m.ambiguous and alg != "none" and m.spec.accept_length is None):
        return out("speculative decoding not stated")
    if alg not in ("none", "dspark"):
        return out(f"speculative algorithm {alg} is not modelled")
    if alg != "none" and m.metric == "itl_ms":
        return out("ITL with speculative decoding (a chunk carries several tokens)")
    if alg == "dspark" and m.spec.accept_length is None:
        return out("DSpark without a stated acceptance length")
    if m.length_distribution == "dataset":
        return out("natural-text prompts: lengths not of a stated distribution")
    dep, why = _layout(m)
    if dep is None:
        return out(why)
    try:
        spec = Spec(alg, float(m.spec.accept_length or 1.0) if alg != "none" else 1.0,
                    block=m.spec.draft_tokens if alg != "none" else None)
        work = Workload(m.input_len, m.output_len or 1, m.concurrency)
        eng = Engine(m.engine, m.max_running_requests, m.max_batched_tokens, m.mem_fraction)
        harness = harness_of(m)
    except ValueError as e:
        return out(str(e))
    kind, value, how = _to_model_units(m, dep)
    kv = "fp8" if (m.kv_dtype or "bf16").startswith("fp8") else "bf16"
    src = data.load("public_measurements").sources[m.source]
    return Observation(m.id, m.source, fam, m.gpu, m.engine, dep, work, spec, kv, kind, value,
                       _variants(m), how, date=m.date or src.date, prefill_attention=_prefill_attention(m),
                       build=m.engine_version or "", origin=origin_of(m.source), engine_settings=eng, harness=harness,
                       harness_name=m.harness or "not stated", statistic=m.statistic)


def harness_of(m) -> Harness:
    """The :class:`~k3lab.serving.engines.Harness` of an entry: its stated arrival process and
    length distribution; where it states neither, its engine's usual harness
    (:func:`k3lab.serving.engines.usual_harness`: a closed loop over fixed lengths for sglang, vLLM
    and TokenSpeed, ATOM's recipes' lengths uniform in [0.8 L, L])."""
    if m.arrival is None and m.length_distribution is None:
        return usual_harness(m.engine)
    return Harness(m.arrival or "closed_loop", m.length_distribution or "fixed", m.range_ratio)


def origin_of(source: str) -> str:
    """Who stands behind a source's figures: the repository it lives in (its issues, pull
    requests, docs, configs and commits are one family: a project's maintainers and their build),
    or the source itself where it names none. Validation leaves a whole origin out: two documents
    of one project are not two independent sources."""
    src = data.load("public_measurements").sources[source]
    return src.repo or source


def _prefill_attention(m) -> str:
    """The MLA prefill attention kernel of a run: ``fallback`` where an AMD run states the Triton
    backend for the target (``--attention-backend triton``: sglang's generic extend-attention,
    which AMD's Day-0 recipes chose while AITER's MLA prefill refused 12 heads per rank), else
    ``fast``. A backend stated only for the draft model does not count."""
    b = (m.attention_backend or "").strip().lower()
    amd = data.load("hardware").gpus[m.gpu].vendor == "amd"
    return "fallback" if amd and b.startswith("triton") else "fast"


def _to_model_units(m, dep: Deployment) -> tuple[str, float, str]:
    """(kind, value, how) for a measurement that passed the rules (see the module docstring)."""
    if m.metric == "tpot_ms":
        return "tpot_ms", float(m.value), "as published"
    if m.metric == "itl_ms":
        if m.statistic in ("median", "p50"):
            return "itl_ms", float(m.value), "median ITL = one decode step"
        return "tpot_ms", float(m.value), "mean ITL read as TPOT"
    if m.metric == "tok_s_per_user":
        return "tpot_ms", 1000.0 / m.value, "TPOT = 1000 / (tok/s per user)"
    if m.metric == "ttft_ms":
        return "ttft_ms", float(m.value), "as published"
    scale = {"deployment": 1, "per_node": dep.num_nodes, "per_gpu": dep.num_gpus, "per_stream": m.concurrency}[m.scope]
    v, how = float(m.value) * scale, {"deployment": "deployment", "per_node": f"× {dep.num_nodes} nodes",
                                      "per_gpu": f"× {dep.num_gpus} GPUs", "per_stream": f"× c{m.concurrency}"}[m.scope]
    if m.metric == "total_tok_s":
        frac = m.output_len / (m.input_len + m.output_len)
        v, how = v * frac, f"{how}, total × O/(I+O) = {frac:.4f}"
    return "output_tok_s", v, how


@data.cached
def _all():
    doc = data.load("public_measurements")
    obs, exc = [], []
    for m in doc.measurements:
        r = normalise(m)
        (obs if isinstance(r, Observation) else exc).append(r)
    return tuple(obs), tuple(exc)


@data.cached
def held_out() -> tuple[Observation, ...]:
    """The figures set aside as ``held_out`` (the repository found last), read as observations
    — for measuring the model on a repository it never saw, never for fitting."""
    doc = data.load("public_measurements")
    rs = [normalise(m, held_out=True) for m in doc.measurements if m.why_kind == "held_out"]
    return tuple(r for r in rs if isinstance(r, Observation))


def observations() -> tuple[Observation, ...]:
    """Every public figure the serving model can be compared with (cached)."""
    return _all()[0]


def excluded() -> tuple[Excluded, ...]:
    """Every public figure left out, with its reason (cached)."""
    return _all()[1]


def table():
    """Observations and exclusions as one DataFrame: id, source, gpu, family, engine, layout,
    input_len, output_len, concurrency, spec, accept_len, kind, value, normalisation, used, reason."""
    import pandas as pd

    rows = [{"id": o.id, "source": o.source, "gpu": o.gpu, "family": o.family, "engine": o.engine,
             "layout": o.deployment.label, "input_len": o.workload.input_len, "output_len": o.workload.output_len,
             "concurrency": o.workload.concurrency, "spec": o.spec.algorithm, "accept_len": o.spec.accept_len,
             "kind": o.kind, "value": o.value, "normalisation": o.normalisation, "used": True, "reason": ""}
            for o in observations()]
    rows += [{"id": e.id, "source": e.source, "gpu": e.gpu, "family": family_of(e.gpu), "engine": None,
              "layout": None, "input_len": None, "output_len": None, "concurrency": None, "spec": None,
              "accept_len": None, "kind": e.metric, "value": None, "normalisation": "", "used": False,
              "reason": e.reason} for e in excluded()]
    return pd.DataFrame(rows)


def measured_accept_lengths(max_input_len: int = 16384) -> list[tuple[str, str | None, float]]:
    """Measured (not simulated) DSpark acceptance lengths of current public Kimi K3 runs whose
    prompts are at most ``max_input_len`` tokens (or unstated), as (id, GPU family or None,
    tokens per verify step): one per run and concurrency, taken from ``accept_length`` figures and
    from runs that state the acceptance they reached. Long-context runs are left out: acceptance
    collapses there."""
    out = {}
    for m in data.load("public_measurements").measurements:
        if m.status != "current" or m.duplicate_of or m.spec.algorithm != "dspark":
            continue
        if m.spec.acceptance != "measured":
            continue
        if m.input_len is not None and m.input_len > max_input_len:
            continue
        v = m.value if m.metric == "accept_length" else m.spec.accept_length
        if v is None:
            continue
        key = (m.source, m.gpu, m.input_len, m.output_len, m.concurrency, round(float(v), 3))
        out.setdefault(key, (m.id, family_of(m.gpu), float(v)))
    return sorted(out.values(), key=lambda x: (x[2], x[0]))

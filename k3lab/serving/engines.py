"""The engine and the benchmark harness as inputs of the serving model: how an engine schedules a
waiting prefill against its running decodes, how many requests it admits, and how the harness
sends requests — which together decide the *regime* the model times (:data:`REGIMES`).

**Engines** (``data/serving_model.yaml`` ``engines``, each with the code it was read from):

- sglang runs a waiting prefill alone before the next decode step ("Run prefill first if
  possible", ``managers/scheduler.py`` ``Scheduler.get_next_batch_to_run``, 0.5.16 and 0.5.23;
  mixed batches only with ``--enable-mixed-chunk``), in chunks of ``--chunked-prefill-size``;
  it admits what its KV and KDA state pools hold (:func:`k3lab.memory.fit`), or
  ``--max-running-requests``;
- ATOM's own server schedules the same way ("Tries prefill first", ``atom/model_engine/scheduler.py``
  ``Scheduler.schedule``, ATOM ffdf3bb5), 16,384 tokens a pass, 512 sequences (``atom/config.py``);
- TokenSpeed too (``enable_mixed_prefill_decode`` false, ``tokenspeed-scheduler`` ``types.h``),
  8,192 tokens a chunk, 160 sequences, 80 with a draft (``server_args.py`` ``ServerArgs``, f4d8ec6e);
- vLLM's V1 scheduler puts the running requests' decodes first and fills the rest of a token budget
  with waiting prompts' chunks (``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule``): prefill
  rides inside the decode batches, 8,192 tokens and 1,024 sequences by default on GPUs of 70 GiB and
  more (``vllm/engine/arg_utils.py`` ``EngineArgs.get_batch_defaults``).

Every engine's admission is also capped by what its KV pool holds at the run's memory fraction
(the same physical pools: k3lab's sizing of sglang's, :func:`admission`).

**Regimes**: ``cohort`` — a prefill-first engine under a harness that starts ``c`` clients together
on fixed-length requests (sglang's ``bench_serving`` with ``--random-range-ratio 1``): the requests
prefill together, decode together and finish together, so the loop runs in cohorts and a request's
TTFT waits for the cohort's prompts ahead of it; ``staggered`` — the same engine when arrivals
spread out (random lengths, a request rate, clients ramped one by one): in steady state a request
arrives alone, its prefill interrupts the running decodes, and its TTFT is its own prefill plus a
wait; ``mixed`` — an engine that batches prefill chunks with decodes (vLLM): whatever the harness,
requests drift out of step, a prompt's chunks ride in the next decode steps and TTFT stays near one
step per chunk until the token budget saturates.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import data

#: engines the model knows (``data/serving_model.yaml`` ``engines``)
ENGINES = ("sglang", "vllm", "atom", "tokenspeed")
REGIMES = ("cohort", "staggered", "mixed")
ARRIVALS = ("closed_loop", "ramped", "rate", "burst")
LENGTHS = ("fixed", "uniform", "dataset")


def engine_facts(engine: str):
    """The ``engines`` entry of ``data/serving_model.yaml`` for ``engine``; ValueError naming the
    known ones otherwise."""
    eng = data.load("serving_model").engines
    if engine not in eng:
        raise ValueError(f"unknown engine {engine!r}; the serving model knows: {', '.join(eng)}")
    return eng[engine]


@dataclass(frozen=True)
class Harness:
    """How the benchmark loads the server: ``arrival`` (:data:`ARRIVALS`) and the length
    distribution ``lengths`` (:data:`LENGTHS`, ``range_ratio`` the low end of a uniform one as a
    share of the stated length). The default is sglang's ``bench_serving`` closed loop over
    fixed-length random requests."""

    arrival: str = "closed_loop"
    lengths: str = "fixed"
    range_ratio: float | None = None

    def __post_init__(self):
        if self.arrival not in ARRIVALS:
            raise ValueError(f"unknown arrival {self.arrival!r}; known: {', '.join(ARRIVALS)}")
        if self.lengths not in LENGTHS:
            raise ValueError(f"unknown length distribution {self.lengths!r}; known: {', '.join(LENGTHS)}")
        if self.range_ratio is not None and not 0 < self.range_ratio < 1:
            raise ValueError(f"range_ratio must be in (0, 1), got {self.range_ratio!r}")

    @property
    def together(self) -> bool:
        """Requests start together and stay alike: a closed loop (or a burst) of fixed lengths."""
        return self.arrival in ("closed_loop", "burst") and self.lengths == "fixed"


COHORT_HARNESS = Harness()


def usual_harness(engine: str) -> Harness:
    """How ``engine``'s own benchmark recipes load it (``data/serving_model.yaml``
    ``usual_harness``): the reading of a figure, or a question, that states no harness — sglang's
    bench_serving over fixed lengths; ATOM's benchmark_serving over lengths uniform in [0.8 L, L]."""
    u = engine_facts(engine).usual_harness
    return Harness(u.arrival, u.lengths, u.range_ratio)


@dataclass(frozen=True)
class Engine:
    """The engine a question runs on and the admission settings a run states (None: the
    engine's default): ``max_running_requests`` (sglang ``--max-running-requests``, vLLM / ATOM /
    TokenSpeed ``--max-num-seqs``), ``max_batched_tokens`` (sglang ``--chunked-prefill-size``,
    vLLM ``--max-num-batched-tokens``), ``mem_fraction`` (sglang ``--mem-fraction-static``, vLLM
    ``--gpu-memory-utilization``)."""

    name: str = "sglang"
    max_running_requests: int | None = None
    max_batched_tokens: int | None = None
    mem_fraction: float | None = None
    #: sglang --mamba-full-memory-ratio (None: sglang's 0.9): the KDA state pool's share, which sets how
    #: many requests run and whether a long one fits (:class:`k3lab.model.pool_settings.StatePoolSettings`)
    mamba_full_memory_ratio: float | None = None
    #: sglang --disable-radix-cache (one state slot per request, no prefix caching) and
    #: --max-mamba-cache-size (state slots): the other two of 0.5.23's state-pool branches
    disable_radix_cache: bool = False
    max_mamba_cache_size: int | None = None

    def __post_init__(self):
        engine_facts(self.name)
        typed = [f for f, v in (("--mamba-full-memory-ratio", self.mamba_full_memory_ratio),
                                ("--max-mamba-cache-size", self.max_mamba_cache_size),
                                ("--disable-radix-cache", self.disable_radix_cache or None)) if v is not None]
        if typed and self.name != "sglang":
            raise ValueError(f"{typed[0]} is sglang's; --engine {self.name} sizes no state pool so")
        for k in ("max_running_requests", "max_batched_tokens", "max_mamba_cache_size"):
            v = getattr(self, k)
            if v is not None:
                data.check_count(k, v)
        if self.mem_fraction is not None and not 0 < self.mem_fraction <= 1:
            raise ValueError(f"mem_fraction must be in (0, 1], got {self.mem_fraction!r}")

    @property
    def scheduler(self) -> str:
        return engine_facts(self.name).scheduler

    def batched_tokens(self, gpu) -> int:
        """Tokens one forward pass takes: the stated budget, else the engine's default (sglang's
        chunked prefill by GPU capacity, :func:`k3lab.serving.model.chunk_tokens`)."""
        if self.max_batched_tokens is not None:
            return int(self.max_batched_tokens)
        d = engine_facts(self.name).max_batched_tokens
        if d is not None:
            return int(d)
        c = data.load("serving_model").chunked_prefill
        return int(c.tokens_large if gpu.usable_hbm_gib >= c.large_from_gib.value else c.tokens_small)

    def state_pool_flags(self) -> str:
        """sglang's state-pool flags this engine states, as typed ("" at sglang's defaults)."""
        return " ".join(f for f in (
            "" if self.mamba_full_memory_ratio is None else f"--mamba-full-memory-ratio {self.mamba_full_memory_ratio:g}",
            "" if self.max_mamba_cache_size is None else f"--max-mamba-cache-size {self.max_mamba_cache_size}",
            "--disable-radix-cache" if self.disable_radix_cache else "") if f)

    def running_limit(self, spec_on: bool) -> int | None:
        """Requests in flight at most by the engine's own setting (None: sized from the pools)."""
        if self.max_running_requests is not None:
            return int(self.max_running_requests)
        f = engine_facts(self.name)
        return f.max_running_requests_spec if spec_on else f.max_running_requests

    def memory_fraction(self) -> float:
        return float(self.mem_fraction if self.mem_fraction is not None else engine_facts(self.name).mem_fraction)


SGLANG = Engine()


def regime(engine: Engine, harness: Harness) -> str:
    """The :data:`REGIMES` entry the model times for ``engine`` under ``harness`` (module docstring)."""
    if engine.scheduler == "mixed":
        return "mixed"
    return "cohort" if harness.together else "staggered"


def mean_lengths(input_len: int, output_len: int, harness: Harness) -> tuple[int, int]:
    """Mean prompt and output tokens of a request: the stated ones, or for a uniform distribution
    over [range_ratio · L, L] (sglang's and ATOM's ``--random-range-ratio``) their middle."""
    if harness.lengths != "uniform" or harness.range_ratio is None:
        return input_len, output_len
    f = (1 + harness.range_ratio) / 2
    return max(1, round(input_len * f)), max(1, round(output_len * f))


@dataclass(frozen=True)
class Admission:
    """Requests of ``context_tokens`` the deployment runs at once (whole deployment):
    ``replicas × min(engine limit, KV pool ÷ context)``; ``binds`` names what limits it."""

    requests: int
    max_running_requests_per_replica: int
    kv_requests_per_replica: int
    replicas: int
    variants: tuple
    engine: str = "sglang"
    #: the state-pool flags the pools were sized at ("": sglang's defaults; :meth:`Engine.state_pool_flags`)
    state_pool: str = ""
    #: why no request is admitted, where none is ("" otherwise): the weights, or what the pools' sizing said
    why_none: str = ""

    def why(self, context_tokens: int) -> str:
        """What binds the admission, in words."""
        per = f"{self.max_running_requests_per_replica:,} per replica"
        if self.kv_requests_per_replica < self.max_running_requests_per_replica:
            n = self.kv_requests_per_replica
            return (f"the KV pool holds {n:,} request{'' if n == 1 else 's'} of {context_tokens:,} tokens per "
                    f"replica (k3lab's sizing of the pools; `python -m k3lab fit` shows it)")
        if self.engine != "sglang":
            return f"{self.engine}'s request limit binds: {per} (--max-num-seqs)"
        # why DSpark admits fewer (newcomer 16/17: 32 against 87, unexplained): each request's draft tokens keep
        # their own verify states in the state pool's memory (k3lab.memory: speculative_num_draft_tokens)
        draft = (", which with DSpark also keeps each request's draft tokens' verify states, so it holds fewer "
                 "requests than without; and DSpark's own --max-running-requests 48" if "dspark" in self.variants else "")
        pool = self.state_pool or "default --mamba-full-memory-ratio"
        return (f"sglang's request slots bind: {per} (--max-running-requests, capped by the KDA state pool at its "
                f"{pool}{draft}); a public run at higher concurrency set larger pools "
                "(--max-running-requests with --max-mamba-cache-size or --disable-radix-cache: `python -m k3lab fit` "
                "lists the settings that still hold a full-context request)")


def admission(cfg, dep, context_tokens: int, spec_on: bool = False, variants=(), kv_dtype: str = "bf16",
              engine: Engine = SGLANG, mem_fraction: float | None = None) -> Admission:
    """:class:`Admission` of ``dep`` for requests of ``context_tokens`` (input + output) under
    ``engine``: sglang's pools as finding 1 sizes them (:func:`k3lab.memory.fit`, the draft's memory
    and its 48-request default with DSpark), another engine's ``max_num_seqs`` capped by the same KV
    pool. ``mem_fraction`` overrides the engine's (and the run's) memory fraction."""
    from .. import memory

    var = tuple(sorted(set(variants) | ({"dspark"} if spec_on else set())))
    mf = engine.memory_fraction() if mem_fraction is None else mem_fraction
    # sglang sizes the state pool from --max-running-requests only in its radix-cache-off branch
    # (k3lab.model.pool_settings); elsewhere the cap applies after the pools, as below
    sized_by_cap = engine.disable_radix_cache and engine.max_mamba_cache_size is None
    p = memory.fit(cfg, dep, mf, kv_dtype, context_tokens=context_tokens, variants=var,
                   mamba_full_memory_ratio=engine.mamba_full_memory_ratio,
                   max_mamba_cache_size=engine.max_mamba_cache_size, disable_radix_cache=engine.disable_radix_cache,
                   max_running_requests=engine.max_running_requests if sized_by_cap else None)
    if not p.weights_fit:
        return Admission(0, 0, 0, dep.replicas, var, engine.name, engine.state_pool_flags(), "the weights do not load")
    kv = p.max_kv_tokens // context_tokens
    limit = engine.running_limit(spec_on)
    if engine.name == "sglang":
        slots = p.max_running_requests if limit is None else min(limit, p.max_running_requests)
    else:  # its own sequence limit; the KV pool k3lab sizes for sglang stands for its pool
        slots = limit
    n = dep.replicas * min(slots, kv)
    return Admission(n, slots, kv, dep.replicas, var, engine.name, engine.state_pool_flags(),
                     "" if n else (p.pool_note or "the weights load, the pools hold none"))

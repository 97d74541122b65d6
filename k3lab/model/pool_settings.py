"""sglang 0.5.23's state-pool settings, the pools of every pipeline stage under them, and the
search for a setting that makes a full-context request fit.

A hybrid model (Kimi K3: 69 KDA + 24 MLA layers) keeps one recurrent-state slot per running
request (5 with the radix cache) beside its KV cache, and sglang 0.5.23 sizes that state pool
first, in one of three ways (``mem_cache/kv_cache_configurator.py``
``KVCacheConfigurator._handle_max_mamba_cache``, tried in this order; the arithmetic is
:func:`k3lab.model.pool_sizing.split_state_pool`):

1. ``explicit``: ``--max-mamba-cache-size N`` → N slots;
2. ``from_max_running_requests``: ``--disable-radix-cache`` with ``--max-running-requests M``
   → M slots (one slot per request: ``_calculate_mamba_ratio`` returns 1 without the cache);
3. ``ratio`` (the default): ``rest × r/(1 + r)`` with ``r = --mamba-full-memory-ratio``
   (``arg_groups/fields/schedule.py``: "the ratio of mamba state memory to full kv cache
   memory", fallback 0.9); ``--disable-radix-cache`` alone stays here, with 1 slot/request.

Whatever the state pool takes, the KV pool loses: :class:`StatePoolSettings` names one choice
as sglang's flags, :func:`size_stages` sizes every pipeline stage under it
(:func:`k3lab.model.pool_sizing.size_pools`; the stage with the fewest tokens binds, as the PP
ranks' ``all_reduce(MIN)`` in ``_apply_token_constraints`` makes it), and
:func:`search_settings` finds, per branch, the setting that makes a full-context request fit
while keeping the most running requests — or says none does.

What 0.5.23 checks of these flags, read from the code (no validation of them exists in
``arg_groups``): a state pool of ``max_mamba_cache_size <= 0`` slots is refused at start-up
(RuntimeError "Not enough GPU memory for hybrid … state cache"), so N must be positive and r
must be above 0 (r = 0 leaves a zero budget); r has no upper bound (r = 2 gives the state pool
2/3 of the budget). ``--disable-radix-cache`` does not require ``--max-running-requests``:
without it sglang takes the ratio branch. A flag the chosen branch ignores
(``--mamba-full-memory-ratio`` beside ``--max-mamba-cache-size``, or beside
``--disable-radix-cache --max-running-requests``) is accepted and silently unused by sglang;
k3lab refuses it (ValueError) rather than report a setting that changes nothing.

Units: bytes, tokens, slots, requests; GiB = 2**30 B.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..data import check_count, check_finite
from . import pool_sizing as ps
from ._checks import check_optional_count

#: 0.5.23's branches in the order ``_handle_max_mamba_cache`` tries them
BRANCHES = ("explicit", "from_max_running_requests", "ratio")
#: the order :func:`search_settings` returns its options in: sglang's default branch first
OPTION_ORDER = ("ratio", "explicit", "from_max_running_requests")
#: the ratio search's grid: r = k / RATIO_GRID for k = 1 … RATIO_GRID_MAX_STEPS
RATIO_GRID = 1000
RATIO_GRID_MAX_STEPS = 100_000  # r up to 100 (the state pool then takes 99 % of the budget)


@dataclass(frozen=True)
class StatePoolSettings:
    """The server flags that decide a hybrid model's state pool (sglang 0.5.23).

    ``mamba_full_memory_ratio``: ``--mamba-full-memory-ratio`` (None: sglang's 0.9);
    ``max_mamba_cache_size``: ``--max-mamba-cache-size`` (state slots; None: not given);
    ``disable_radix_cache``: ``--disable-radix-cache``; ``max_running_requests``:
    ``--max-running-requests`` (None: sglang's own; it also caps running requests in every
    branch). ValueError (one line, naming the flag) for a bad value or a ratio the chosen
    branch ignores.
    """

    mamba_full_memory_ratio: float | None = None
    max_mamba_cache_size: int | None = None
    disable_radix_cache: bool = False
    max_running_requests: int | None = None

    def __post_init__(self):
        r = self.mamba_full_memory_ratio
        if r is not None:
            try:
                check_finite("r", r)
            except ValueError:
                raise ValueError(f"--mamba-full-memory-ratio must be a finite number > 0 (sglang's ratio of "
                                 f"state memory to KV memory; 0.9 by default), got {r!r}") from None
        for flag, v in (("--max-mamba-cache-size", self.max_mamba_cache_size),
                        ("--max-running-requests", self.max_running_requests)):
            try:
                check_optional_count("v", v)
            except ValueError:
                raise ValueError(f"{flag} must be a positive integer, got {v!r}") from None
        if not isinstance(self.disable_radix_cache, bool):
            raise ValueError(f"disable_radix_cache must be true or false, got {self.disable_radix_cache!r}")
        if r is not None and self.branch != "ratio":
            other = ("--max-mamba-cache-size" if self.branch == "explicit"
                     else "--disable-radix-cache with --max-running-requests")
            raise ValueError(f"--mamba-full-memory-ratio has no effect with {other}: sglang 0.5.23 sizes the "
                             "state pool from that first (KVCacheConfigurator._handle_max_mamba_cache); give one")

    @property
    def branch(self) -> str:
        """Which of 0.5.23's three branches sizes the pool (see the module docstring)."""
        if self.max_mamba_cache_size is not None:
            return "explicit"
        if self.disable_radix_cache and self.max_running_requests is not None:
            return "from_max_running_requests"
        return "ratio"

    @property
    def ratio(self) -> float:
        """The ``--mamba-full-memory-ratio`` in effect (sglang's 0.9 when none is given)."""
        return ps.DEFAULT_MAMBA_FULL_MEMORY_RATIO if self.mamba_full_memory_ratio is None \
            else float(self.mamba_full_memory_ratio)

    @property
    def is_default(self) -> bool:
        """sglang's default state pool (ratio 0.9, radix cache on); ``--max-running-requests``
        aside, which caps requests but sizes no pool in this branch."""
        return (self.mamba_full_memory_ratio is None and self.max_mamba_cache_size is None
                and not self.disable_radix_cache)

    def defaults(self) -> StatePoolSettings:
        """These settings with the three state-pool flags back at sglang's defaults."""
        return StatePoolSettings(max_running_requests=self.max_running_requests)

    def flags(self, *, with_max_running_requests: bool = True) -> str:
        """The settings as sglang's command-line flags ("" for the defaults)."""
        out = []
        if self.mamba_full_memory_ratio is not None:
            out.append(f"--mamba-full-memory-ratio {self.mamba_full_memory_ratio:g}")
        if self.max_mamba_cache_size is not None:
            out.append(f"--max-mamba-cache-size {self.max_mamba_cache_size}")
        if self.disable_radix_cache:
            out.append("--disable-radix-cache")
        if self.max_running_requests is not None and (with_max_running_requests
                                                      or self.branch == "from_max_running_requests"):
            out.append(f"--max-running-requests {self.max_running_requests}")
        return " ".join(out)

    def slots_per_request(self, with_radix_cache: int) -> int:
        """State slots per running request: ``with_radix_cache`` (5 for K3's default
        ``extra_buffer`` strategy), 1 with the radix cache disabled
        (``KVCacheConfigurator._calculate_mamba_ratio``)."""
        return 1 if self.disable_radix_cache else with_radix_cache


@dataclass(frozen=True)
class StageMemory:
    """One pipeline stage's GPU memory as sglang measures it, and its KV cell (bytes)."""

    pre_model_load_free_bytes: int
    post_load_free_bytes: int
    cell_bytes_per_token: int


@dataclass(frozen=True)
class PoolProblem:
    """Everything :func:`size_stages` needs besides the state-pool settings.

    ``stages``: one :class:`StageMemory` per pipeline stage; ``state_bytes_per_slot``: the
    slot every stage charges (:func:`k3lab.model.pool_sizing.pp_state_bytes_per_slot`), None
    for a model without linear attention; ``slots_per_request``: with the radix cache (1 is
    used without it); ``speculative_num_draft_tokens``: D under DFLASH/DSPARK (None without).
    """

    stages: tuple
    mem_fraction_static: float
    context_len: int
    state_bytes_per_slot: int | None = None
    page_size: int = 1
    mm_reserve_gib: float = 0.0
    attn_dp_size: int = 1
    slots_per_request: int = 5
    speculative_num_draft_tokens: int | None = None

    def rest_gib(self) -> list[float]:
        """Per stage, the GiB the pools share (:func:`~k3lab.model.pool_sizing.profile_rest_memory_gib`);
        :class:`~k3lab.model.pool_sizing.InsufficientMemoryError` when the weights leave none."""
        return [ps.profile_rest_memory_gib(pre_model_load_free_bytes=s.pre_model_load_free_bytes,
                                           post_load_free_bytes=s.post_load_free_bytes,
                                           mem_fraction_static=self.mem_fraction_static,
                                           mm_reserve_gib=self.mm_reserve_gib) for s in self.stages]


@dataclass(frozen=True)
class StagesSizing:
    """:func:`size_stages`'s answer: every stage's :class:`~k3lab.model.pool_sizing.PoolSizing`."""

    settings: StatePoolSettings
    stages: tuple            # PoolSizing per stage
    context_len: int

    @property
    def binding(self):
        """The stage with the fewest KV tokens (all PP ranks then run with that many)."""
        return min(self.stages, key=lambda s: s.max_total_num_tokens)

    @property
    def max_total_num_tokens(self) -> int:
        return self.binding.max_total_num_tokens

    @property
    def max_running_requests(self) -> int:
        return self.binding.max_running_requests

    @property
    def full_context_requests(self) -> int:
        """Concurrent requests of ``context_len`` tokens the pools hold."""
        return min(self.max_total_num_tokens // self.context_len, self.max_running_requests)

    @property
    def fits(self) -> bool:
        return self.full_context_requests >= 1


def size_stages(problem: PoolProblem, settings: StatePoolSettings) -> StagesSizing:
    """Size every stage's pools under ``settings`` (:func:`k3lab.model.pool_sizing.size_pools`).

    Raises :class:`~k3lab.model.pool_sizing.InsufficientMemoryError` (a ValueError) when a
    stage has no room: for the weights (see :meth:`PoolProblem.rest_gib`), for the state pool,
    for one KV page, or for one running request.
    """
    spr = settings.slots_per_request(problem.slots_per_request)
    out = []
    for st in problem.stages:
        out.append(ps.size_pools(
            pre_model_load_free_bytes=st.pre_model_load_free_bytes, post_load_free_bytes=st.post_load_free_bytes,
            mem_fraction_static=problem.mem_fraction_static, cell_bytes_per_token=st.cell_bytes_per_token,
            context_len=problem.context_len, state_bytes_per_slot=problem.state_bytes_per_slot,
            page_size=problem.page_size, mamba_full_memory_ratio=settings.ratio, slots_per_request=spr,
            max_mamba_cache_size=settings.max_mamba_cache_size, max_running_requests=settings.max_running_requests,
            radix_cache=not settings.disable_radix_cache,
            speculative_num_draft_tokens=problem.speculative_num_draft_tokens,
            mm_reserve_gib=problem.mm_reserve_gib, attn_dp_size=problem.attn_dp_size))
    return StagesSizing(settings=settings, stages=tuple(out), context_len=problem.context_len)


@dataclass(frozen=True)
class FitOption:
    """One state-pool setting under which a full-context request fits, and what it leaves."""

    settings: StatePoolSettings
    max_total_num_tokens: int
    max_running_requests: int
    full_context_requests: int
    state_slots: int

    @property
    def branch(self) -> str:
        return self.settings.branch

    @property
    def flags(self) -> str:
        return self.settings.flags(with_max_running_requests=False)

    def as_dict(self) -> dict:
        return {"flags": self.flags, "branch": self.branch, "max_kv_tokens": self.max_total_num_tokens,
                "max_running_requests": self.max_running_requests,
                "full_context_requests": self.full_context_requests, "state_slots": self.state_slots}


def _option(sized: StagesSizing) -> FitOption:
    return FitOption(settings=sized.settings, max_total_num_tokens=sized.max_total_num_tokens,
                     max_running_requests=sized.max_running_requests,
                     full_context_requests=sized.full_context_requests,
                     state_slots=sized.binding.max_mamba_cache_size)


def sized_or_none(problem: PoolProblem, settings: StatePoolSettings) -> StagesSizing | None:
    """:func:`size_stages`, or None where a stage has no room under ``settings``."""
    try:
        return size_stages(problem, settings)
    except ps.InsufficientMemoryError:
        return None


def _last_true(lo: int, hi: int, pred) -> int | None:
    """The largest x in [lo, hi] with ``pred(x)``, for a ``pred`` true up to some x and false
    after it (None when ``pred(lo)`` is false)."""
    if lo > hi or not pred(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _first_true(lo: int, hi: int, pred) -> int | None:
    """The smallest x in [lo, hi] with ``pred(x)``, for a ``pred`` false up to some x and true
    after it (None when ``pred(hi)`` is false): one past the last x where it is false."""
    if lo > hi or not pred(hi):
        return None
    last_false = _last_true(lo, hi, lambda x: not pred(x))
    return lo if last_false is None else last_false + 1


def search_settings(problem: PoolProblem, asked: StatePoolSettings | None = None) -> tuple[FitOption, ...]:
    """Per branch of sglang 0.5.23's state-pool sizing, the setting under which one request of
    ``problem.context_len`` tokens fits with the most running requests, in
    :data:`OPTION_ORDER`; () when none does (or the model has no state pool, or the weights
    leave no room).

    How the setting space is searched: everything but the three state-pool flags is held as
    ``problem`` and ``asked`` give it (GPU, layout, variants, mem fraction, KV dtype, context,
    start-up overhead, the draft, and ``asked.max_running_requests`` for branches 1 and 3).
    Each branch is searched on its own, one flag (pair) at a time, starting from sglang's
    defaults:

    - ``--max-mamba-cache-size N`` (radix cache on): the KV pool shrinks as N grows, so the
      largest N (an integer from ``slots_per_request × attn DP`` up, where one request gets
      its slots) that still holds the request is found by bisection;
    - ``--disable-radix-cache --max-running-requests M``: likewise the largest M from 1 up
      (one slot per request; this gives up prefix caching);
    - ``--mamba-full-memory-ratio r`` (radix cache on), on a grid of 0.001 from 0.001 to
      100: the slots grow with r and the KV pool shrinks, so the r that fit form one
      interval; its low end (the first r whose pool gives every stage one request's slots)
      and then its high end (the last r whose KV pool still holds the request) are found by
      bisection, and the high end is reported (the most running requests).

    Monotonicity makes each bisection exact on its grid; the KV tokens and slots of each
    candidate come from :func:`size_stages`, i.e. the same arithmetic that sizes the default.
    Combinations of the branches are not searched: sglang uses one branch at a time, and
    ``--disable-radix-cache`` alone changes the slots per request, not the KV pool.
    """
    if problem.state_bytes_per_slot is None:
        return ()
    try:
        rests = problem.rest_gib()
    except ps.InsufficientMemoryError:
        return ()
    base = (asked or StatePoolSettings()).defaults()
    m_user = base.max_running_requests
    dp = problem.attn_dp_size
    slot = problem.state_bytes_per_slot
    # no stage can hold more slots than its whole rest: the top of the N and M searches
    top = max(int(r * ps.GiB // slot) for r in rests) + 1

    def fits(settings: StatePoolSettings) -> bool:
        sized = sized_or_none(problem, settings)
        return sized is not None and sized.fits

    out = []
    # branch 1: --max-mamba-cache-size N
    spr = problem.slots_per_request
    n = _last_true(spr * dp, (top + 1) * dp, lambda x: fits(replace(base, max_mamba_cache_size=x)))
    if n is not None:
        out.append(_option(size_stages(problem, replace(base, max_mamba_cache_size=n))))
    # branch 2: --disable-radix-cache --max-running-requests M
    m = _last_true(1, (top + 1) * dp, lambda x: fits(StatePoolSettings(disable_radix_cache=True,
                                                                       max_running_requests=x)))
    if m is not None:
        out.append(_option(size_stages(problem, StatePoolSettings(disable_radix_cache=True,
                                                                  max_running_requests=m))))
    # branch 3: --mamba-full-memory-ratio r, r = k / 1000

    def ratio(k: int) -> StatePoolSettings:
        return StatePoolSettings(mamba_full_memory_ratio=k / RATIO_GRID, max_running_requests=m_user)

    def enough_slots(k: int) -> bool:
        r = ratio(k)
        try:
            return all(ps.split_state_pool(rest, state_bytes_per_slot=slot, mamba_full_memory_ratio=r.ratio,
                                           slots_per_request=spr, max_running_requests=r.max_running_requests,
                                           speculative_num_draft_tokens=problem.speculative_num_draft_tokens,
                                           attn_dp_size=dp).max_mamba_cache_size >= spr for rest in rests)
        except ps.InsufficientMemoryError:
            return False

    k_lo = _first_true(1, RATIO_GRID_MAX_STEPS, enough_slots)
    if k_lo is not None:
        k = _last_true(k_lo, RATIO_GRID_MAX_STEPS, lambda x: fits(ratio(x)))
        if k is not None:
            out.append(_option(size_stages(problem, ratio(k))))
    return tuple(sorted(out, key=lambda o: OPTION_ORDER.index(o.branch)))


def best_option(options) -> FitOption | None:
    """The option to name first: the most running requests among those that keep the radix
    cache (prefix caching), ties to the ratio (the flag sglang's own start-up warning names
    first), then the explicit size; the radix-cache-off option only when no other fits."""
    keep = [o for o in options if not o.settings.disable_radix_cache]
    pool = keep or list(options)
    if not pool:
        return None
    return max(pool, key=lambda o: (o.max_running_requests, -OPTION_ORDER.index(o.branch)))

"""k3lab.model.pool_settings: sglang 0.5.23's three state-pool branches and the search over them.

Every expected value is worked out by hand in this file, from the formulas of
``mem_cache/kv_cache_configurator.py`` ``KVCacheConfigurator._handle_max_mamba_cache`` and
``resolve_max_num_reqs`` (0.5.23) on round numbers, never taken from the code under test:

- rest = free after load − (1 − f) × free before load (GiB);
- explicit:  N slots; ratio: K = int((rest·r/(1+r) − slot) // slot); radix off + M: M slots;
- KV tokens = (rest − (slots + 1)·slot) // cell;
- running requests = min(clamp(int(tokens / ctx · 512), 2048, 4096), tokens // 2, slots // spr),
  spr = 5 with the radix cache, 1 without (M itself caps it when given).

The problem used throughout: 100 GiB free before loading, 40 GiB after, f = 0.9 → rest 30 GiB;
a 1 GiB state slot; a 1 MiB KV cell (1,024 tokens per GiB); pages of 1 token.
"""

import math

import pytest

from k3lab.model import pool_settings as pset
from k3lab.model import pool_sizing as ps

GiB, MiB = 2**30, 2**20


def problem(context_len, slot=GiB, stages=None, **kw):
    stages = stages or (pset.StageMemory(100 * GiB, 40 * GiB, MiB),)
    return pset.PoolProblem(stages=tuple(stages), mem_fraction_static=0.9, context_len=context_len,
                            state_bytes_per_slot=slot, **kw)


# --------------------------------------------------------------------------- the three branches by hand


def test_ratio_branch_default_by_hand():
    # budget 30 · 0.9/1.9 = 14.21 GiB → K = int(14.21 − 1) = 13; state (13 + 1) GiB; KV 16 GiB
    # = 16,384 tokens; requests min(2048 (int(16384/8192·512) = 1024 → 2048), 8192, 13 // 5) = 2
    s = pset.size_stages(problem(8192), pset.StatePoolSettings())
    b = s.binding
    assert (b.state_branch, b.max_mamba_cache_size, b.max_total_num_tokens) == ("ratio", 13, 16_384)
    assert s.max_running_requests == 2 and s.full_context_requests == 2 and s.fits


def test_ratio_branch_above_one_by_hand():
    # r = 2: budget 30 · 2/3 = 20 GiB → K = 19; state 20 GiB; KV 10 GiB = 10,240 tokens; 19 // 5 = 3
    s = pset.size_stages(problem(8192), pset.StatePoolSettings(mamba_full_memory_ratio=2.0))
    assert (s.binding.max_mamba_cache_size, s.max_total_num_tokens, s.max_running_requests) == (19, 10_240, 3)


def test_explicit_branch_by_hand():
    # N = 9: state 10 GiB; KV 20 GiB = 20,480 tokens; requests min(2048, 10240, 9 // 5 = 1) = 1
    s = pset.size_stages(problem(20_000), pset.StatePoolSettings(max_mamba_cache_size=9))
    assert (s.binding.state_branch, s.binding.max_mamba_cache_size) == ("explicit", 9)
    assert (s.max_total_num_tokens, s.max_running_requests, s.full_context_requests) == (20_480, 1, 1)


def test_from_max_running_requests_branch_by_hand():
    # radix off, M = 9: 9 slots of one per request; state 10 GiB; KV 20,480 tokens; requests min(9, 10240, 9)
    s = pset.size_stages(problem(20_000), pset.StatePoolSettings(disable_radix_cache=True, max_running_requests=9))
    assert (s.binding.state_branch, s.binding.max_mamba_cache_size) == ("from_max_running_requests", 9)
    assert (s.max_total_num_tokens, s.max_running_requests) == (20_480, 9)


def test_radix_cache_off_alone_stays_in_the_ratio_branch_with_one_slot_per_request():
    # K = 13 as by default, but 13 // 1 = 13 requests (2048 and 8192 do not bind)
    s = pset.size_stages(problem(8192), pset.StatePoolSettings(disable_radix_cache=True))
    assert (s.binding.state_branch, s.binding.max_mamba_cache_size, s.max_running_requests) == ("ratio", 13, 13)


def test_pipeline_stages_bind_on_the_fewest_tokens():
    # stage 2 has 35 GiB free after loading: rest 25 → K = int(25·0.9/1.9 − 1) = 10, KV 14 GiB
    stages = (pset.StageMemory(100 * GiB, 40 * GiB, MiB), pset.StageMemory(100 * GiB, 35 * GiB, MiB))
    s = pset.size_stages(problem(8192, stages=stages), pset.StatePoolSettings())
    assert [x.max_total_num_tokens for x in s.stages] == [16_384, 14_336]
    assert (s.max_total_num_tokens, s.max_running_requests) == (14_336, 10 // 5)


def test_pp_state_slot_is_the_largest_stage_share_with_sglangs_float_product():
    # K3 at PP2: 35 and 34 of the 69 KDA layers; every stage charges 35/69 of the slot
    assert ps.pp_state_bytes_per_slot(56_171_520, stage_linear_layers=[35, 34]) == 56_171_520 // 69 * 35
    # sglang multiplies by the float 39/69, which lands one byte under the exact share
    assert ps.pp_state_bytes_per_slot(56_171_520, stage_linear_layers=[39, 30]) == int(56_171_520 * (39 / 69))
    assert int(56_171_520 * (39 / 69)) == 56_171_520 // 69 * 39 - 1
    assert ps.pp_state_bytes_per_slot(1000, stage_linear_layers=[7]) == 1000
    assert ps.pp_state_bytes_per_slot(1000, stage_linear_layers=[0, 0]) == 0


# --------------------------------------------------------------------------- the search, by hand


def test_search_finds_each_branchs_edge():
    """A 20,000-token request (19.53 GiB) does not fit by default (16,384 tokens).
    explicit: 30 − (N + 1) GiB ≥ 20,000 MiB ⇔ N ≤ 9.47 → N = 9 (20,480 tokens; N = 10 gives 19,456);
    radix off: the same slots, M = 9, 9 requests;
    ratio: K ≤ 9 ⇔ 30r/(1+r) < 11 ⇔ r < 11/19 = 0.5789 → r = 0.578 on the 0.001 grid (K = 9)."""
    p = problem(20_000)
    assert not pset.size_stages(p, pset.StatePoolSettings()).fits
    opts = {o.branch: o for o in pset.search_settings(p)}
    assert [o.branch for o in pset.search_settings(p)] == ["ratio", "explicit", "from_max_running_requests"]
    r, n, m = opts["ratio"], opts["explicit"], opts["from_max_running_requests"]
    assert r.settings.mamba_full_memory_ratio == 0.578 and r.state_slots == 9
    assert (r.max_total_num_tokens, r.max_running_requests, r.full_context_requests) == (20_480, 1, 1)
    assert n.settings.max_mamba_cache_size == 9 and (n.max_total_num_tokens, n.max_running_requests) == (20_480, 1)
    assert m.settings.max_running_requests == 9 and m.settings.disable_radix_cache and m.max_running_requests == 9
    assert r.flags == "--mamba-full-memory-ratio 0.578"
    assert n.flags == "--max-mamba-cache-size 9"
    assert m.flags == "--disable-radix-cache --max-running-requests 9"
    # ratio and explicit tie at one request: the ratio is named first
    assert pset.best_option(opts.values()) is r


def test_search_only_the_radix_cache_off_fits():
    """26,000 tokens (25.39 GiB): with the radix cache every request needs 5 slots, N ≥ 5 leaves
    at most 30 − 6 = 24 GiB; without it M = 3 leaves 26 GiB = 26,624 tokens (M = 4: 25,600)."""
    opts = pset.search_settings(problem(26_000))
    assert [(o.branch, o.settings.max_running_requests) for o in opts] == [("from_max_running_requests", 3)]
    assert pset.best_option(opts).max_running_requests == 3


def test_search_nothing_fits():
    # 30,000 tokens = 29.3 GiB: even M = 1 (2 GiB of state) leaves 28 GiB
    p = problem(30_000)
    assert pset.search_settings(p) == () and pset.best_option(()) is None


def test_search_raises_the_ratio_when_the_state_pool_is_too_small():
    """A 4 GiB slot: by default K = int((14.21 − 4) // 4) = 2 < 5 slots for one request. A 4,096-
    token request (4 GiB) needs K = 5 exactly: 30r/(1+r) ≥ 24 ⇔ r ≥ 4, and < 28 ⇔ r < 14 →
    r = 13.999 (K = 5, KV 30 − 24 = 6 GiB); N = 5; radix off M = 5 (KV 30 − 24 = 6 GiB)."""
    p = problem(4096, slot=4 * GiB)
    with pytest.raises(ps.InsufficientMemoryError):
        pset.size_stages(p, pset.StatePoolSettings())
    opts = {o.branch: o for o in pset.search_settings(p)}
    assert opts["ratio"].settings.mamba_full_memory_ratio == 13.999 and opts["ratio"].state_slots == 5
    assert opts["explicit"].settings.max_mamba_cache_size == 5
    assert opts["from_max_running_requests"].settings.max_running_requests == 5
    assert opts["ratio"].max_total_num_tokens == 6 * 1024


def test_search_keeps_the_users_max_running_requests_and_attention_dp():
    # attn DP 2 divides N: N = 18 → 9 per worker (the same pools as N = 9 above), N = 19 → 9 too
    p = problem(20_000, attn_dp_size=2)
    n = {o.branch: o for o in pset.search_settings(p)}["explicit"]
    assert n.settings.max_mamba_cache_size == 19 and n.state_slots == 9
    # a user cap of 1 request carries into the explicit and ratio options
    capped = pset.search_settings(problem(20_000), pset.StatePoolSettings(max_running_requests=1))
    assert {o.branch: o.settings.max_running_requests for o in capped}["explicit"] == 1


def test_no_state_pool_or_no_room_gives_no_option():
    assert pset.search_settings(problem(20_000, slot=None)) == ()
    stuck = (pset.StageMemory(100 * GiB, 5 * GiB, MiB),)  # 5 GiB free < the 10 GiB slack
    assert pset.search_settings(problem(1000, stages=stuck)) == ()


# --------------------------------------------------------------------------- settings


def test_settings_branch_flags_and_defaults():
    s = pset.StatePoolSettings()
    assert (s.branch, s.ratio, s.is_default, s.flags()) == ("ratio", 0.9, True, "")
    e = pset.StatePoolSettings(max_mamba_cache_size=300, max_running_requests=20)
    assert e.branch == "explicit" and e.flags() == "--max-mamba-cache-size 300 --max-running-requests 20"
    assert e.flags(with_max_running_requests=False) == "--max-mamba-cache-size 300"
    assert e.defaults() == pset.StatePoolSettings(max_running_requests=20)
    assert pset.StatePoolSettings(disable_radix_cache=True).branch == "ratio"
    assert pset.StatePoolSettings(disable_radix_cache=True, max_running_requests=4).branch == "from_max_running_requests"
    assert pset.StatePoolSettings(disable_radix_cache=True).slots_per_request(5) == 1
    assert pset.StatePoolSettings(max_running_requests=48).is_default


@pytest.mark.parametrize("kw, match", [
    ({"mamba_full_memory_ratio": 0}, "--mamba-full-memory-ratio must be a finite number > 0"),
    ({"mamba_full_memory_ratio": -0.5}, "--mamba-full-memory-ratio must be"),
    ({"mamba_full_memory_ratio": math.nan}, "--mamba-full-memory-ratio must be"),
    ({"mamba_full_memory_ratio": math.inf}, "--mamba-full-memory-ratio must be"),
    ({"mamba_full_memory_ratio": "0.5"}, "--mamba-full-memory-ratio must be"),
    ({"max_mamba_cache_size": 0}, "--max-mamba-cache-size must be a positive integer"),
    ({"max_mamba_cache_size": -3}, "--max-mamba-cache-size must be a positive integer"),
    ({"max_mamba_cache_size": True}, "--max-mamba-cache-size must be a positive integer"),
    ({"max_running_requests": 0}, "--max-running-requests must be a positive integer"),
    ({"disable_radix_cache": "yes"}, "disable_radix_cache must be true or false"),
    ({"mamba_full_memory_ratio": 0.5, "max_mamba_cache_size": 10}, "no effect with --max-mamba-cache-size"),
    ({"mamba_full_memory_ratio": 0.5, "disable_radix_cache": True, "max_running_requests": 4},
     "no effect with --disable-radix-cache with --max-running-requests"),
])
def test_bad_settings_are_one_line_value_errors(kw, match):
    with pytest.raises(ValueError, match=match) as e:
        pset.StatePoolSettings(**kw)
    assert "\n" not in str(e.value)

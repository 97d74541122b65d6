"""Schemas of the sglang transcripts under ``data/measured/<machine>/`` (JSON written by
``benchmarks/sglang_*.py`` in ``.venv-sglang``, replayed by the notebooks):

- ``sglang_topk_repro.json`` (:class:`TopkRepro`, notebook 02): the verify path of 0.5.16
  as shipped, in the PR #32621 binding state and patched;
- ``sglang_aiter_probe.json`` (:class:`AiterProbe`, notebook 03): 0.5.16's AITER backend;
- ``sglang_release_matrix.json`` (:class:`ReleaseMatrix`, notebooks 02 and 03, the patches);
- ``sglang_0523_k3_rank_bytes.json`` (:class:`RankBytes`, tests of finding 1).

What k3lab reads is typed strictly; the rest of the two big transcripts (the release matrix,
the rank bytes) is kept as recorded (:func:`~.files.open_`) and checked only by the readers'
generic rules: valid UTF-8 JSON, no duplicate keys, every number finite, byte counts
non-negative integers.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from ..versions import version_key
from .files import JsonFile, closed, open_
from .measured import NonNeg, NonNegInt, PosInt, Text, Utc

Version = Annotated[str, Field(strict=True, pattern=r"^\d+\.\d+\.\d+(\.post\d+)?$")]
Shape = Annotated[list[PosInt], Field(min_length=1)]
Heads = Annotated[list[PosInt], Field(min_length=1)]


# --------------------------------------------------------------------------- sglang_topk_repro.json

#: the binding states of the transcript (k3lab.probes.topk_repro.STATES)
TOPK_STATES = ("0.5.16", "pr32621", "patched")
TopkState = Literal["0.5.16", "pr32621", "patched"]


@closed
class TopkCrash(TypedDict):
    exception_lines: Annotated[list[Text], Field(min_length=1)]
    last_line: Text
    returncode: PosInt   # an uncaught exception exits with 1; 0 would be no crash
    traceback_mentions: list[Text]


@closed
class TopkRow(TypedDict):
    error: str
    matches_reference: bool | Literal[""]
    mix: Text
    need_top_k: bool
    need_top_p: bool
    outcome: Text
    path: Literal["dense", "sparse"]
    state: TopkState


@closed
class TopkReproDoc(TypedDict):
    bindings: dict[TopkState, dict[Text, Text]]
    crash: TopkCrash
    crash_mix: Text
    draft_tokens: PosInt
    requests_per_mix: dict[Text, PosInt]
    rows: Annotated[list[TopkRow], Field(min_length=1)]
    sglang_version: Version
    state_labels: dict[TopkState, Text]
    vocab: PosInt


def _outcome_rules(where: str, r: dict) -> None:
    """``ok`` ⇔ no error; an error starts with its outcome (the exception's name)."""
    if (r["outcome"] == "ok") != (r["error"] == ""):
        raise ValueError(f"{where}.error: outcome {r['outcome']!r} with error {r['error']!r}: "
                         "a run is 'ok' exactly when it has no error")
    if r["outcome"] != "ok" and not r["error"].startswith(r["outcome"]):
        raise ValueError(f"{where}.error: {r['error']!r} does not start with its outcome {r['outcome']!r}")


class TopkRepro(JsonFile):
    """Every (state, request mix) once, for every state; ``matches_reference`` a yes/no exactly
    when the run is ok; the crash's last line is its last exception line."""

    schema = TopkReproDoc

    @classmethod
    def check(cls, doc):
        for key in ("bindings", "state_labels"):
            missing = [s for s in TOPK_STATES if s not in doc[key]]
            if missing:
                raise ValueError(f"{key}: missing state(s) {missing}")
        seen = set()
        for i, r in enumerate(doc["rows"]):
            _outcome_rules(f"rows.{i}", r)
            if (r["outcome"] == "ok") != isinstance(r["matches_reference"], bool):
                raise ValueError(f"rows.{i}.matches_reference: {r['matches_reference']!r} for outcome "
                                 f"{r['outcome']!r} (a yes/no exactly when the run is ok, '' otherwise)")
            if (r["state"], r["mix"]) in seen:
                raise ValueError(f"rows.{i}: state {r['state']!r}, mix {r['mix']!r} twice")
            seen.add((r["state"], r["mix"]))
        mixes = {m for _, m in seen}
        for s in TOPK_STATES:
            if {m for st, m in seen if st == s} != mixes:
                raise ValueError(f"rows: state {s!r} lacks some request mixes")
        if set(doc["requests_per_mix"]) != mixes:
            raise ValueError("requests_per_mix: its mixes differ from the rows' mixes")
        if doc["crash_mix"] not in mixes:
            raise ValueError(f"crash_mix: {doc['crash_mix']!r} is not a request mix of the rows")
        if doc["crash"]["last_line"] != doc["crash"]["exception_lines"][-1]:
            raise ValueError("crash.last_line: differs from the last of crash.exception_lines")


# --------------------------------------------------------------------------- sglang_aiter_probe.json


@closed
class ProbePrefillPatched(TypedDict):
    bitwise_equal_to_reference: bool
    kernel_heads: Heads
    max_abs_diff: NonNeg
    ok: bool
    out_shape: Shape
    reduce_heads: Heads


@closed
class ProbePrefillUnpadded(TypedDict):
    error: str
    ok: bool


@closed
class ProbeTpRow(TypedDict):
    heads_per_rank: PosInt
    patched_num_head: PosInt
    patched_num_head_padded: PosInt
    patched_real_heads: PosInt
    patched_starts: bool
    tp: PosInt
    unpatched_error: str
    unpatched_starts: bool


@closed
class AiterProbeDoc(TypedDict):
    command: Text
    date_utc: Utc
    patched: list[Text]
    prefill_12_heads_patched: ProbePrefillPatched
    prefill_12_heads_unpadded: ProbePrefillUnpadded
    python: Text
    real: Text
    reverted: list[Text]
    sglang: Version
    stand_ins: Text
    torch: Text
    tp_rows: Annotated[list[ProbeTpRow], Field(min_length=1)]


class AiterProbe(JsonFile):
    """A patched prefill that ran: bit-identical exactly when its difference is 0; an
    unpadded one that was refused says why; every TP row splits the same heads, starts
    unpatched exactly when it has no error, and the patch keeps the real heads."""

    schema = AiterProbeDoc

    @classmethod
    def check(cls, doc):
        pp = doc["prefill_12_heads_patched"]
        if pp["ok"] and pp["bitwise_equal_to_reference"] != (pp["max_abs_diff"] == 0):
            raise ValueError(f"prefill_12_heads_patched.max_abs_diff: {pp['max_abs_diff']!r} but "
                             f"bitwise_equal_to_reference is {pp['bitwise_equal_to_reference']}")
        un = doc["prefill_12_heads_unpadded"]
        if un["ok"] == bool(un["error"]):
            raise ValueError("prefill_12_heads_unpadded.error: an error exactly when it did not run (ok false)")
        if doc["patched"] != doc["reverted"]:
            raise ValueError("reverted: must list what was patched")
        total = {r["heads_per_rank"] * r["tp"] for r in doc["tp_rows"]}
        if len(total) != 1:
            raise ValueError(f"tp_rows: heads_per_rank × tp differ between rows ({sorted(total)})")
        for i, r in enumerate(doc["tp_rows"]):
            if r["unpatched_starts"] == bool(r["unpatched_error"]):
                raise ValueError(f"tp_rows.{i}.unpatched_error: an error exactly when it does not start")
            if r["patched_real_heads"] != r["heads_per_rank"]:
                raise ValueError(f"tp_rows.{i}.patched_real_heads: {r['patched_real_heads']} != heads_per_rank "
                                 f"{r['heads_per_rank']}")
            if r["patched_num_head"] < r["heads_per_rank"] or r["patched_num_head_padded"] < r["patched_num_head"]:
                raise ValueError(f"tp_rows.{i}: the patch pads heads up, never down")


# --------------------------------------------------------------------------- sglang_release_matrix.json

#: the one head count per rank the notebooks and patches read (96 heads at TP8)
TP8_KEY = "96 heads TP8 (12/rank)"


@open_
class MatrixVerify(TypedDict):
    error: str
    need_top_k: bool
    need_top_p: bool
    outcome: Text
    path: Literal["dense", "sparse"]
    random_matches_reference: Text | None   # None when the run failed
    ties: Text


@open_
class MatrixBindings(TypedDict):
    top_k_renorm_prob: Text
    top_p_renorm_prob: Text


@open_
class MatrixMode12(TypedDict):
    head_pad_mode: Text
    num_head_padded: PosInt


@open_
class MatrixPrefill12(TypedDict):
    kernel: Text
    kernel_heads: Heads
    max_abs_diff_vs_with_head_padding: NonNeg
    ok: bool
    padded_heads_content: NotRequired[Text]


@open_
class MatrixPatch(TypedDict):
    applies: bool
    forced: bool
    prefill_12: NotRequired[MatrixPrefill12 | None]


@open_
class MatrixAiter(TypedDict):
    accepts_12: bool
    error_12: str
    mode_12: MatrixMode12 | None
    default_backend_on_hip: dict[Text, Text]
    prefill_12: MatrixPrefill12 | None
    k3lab_patch: MatrixPatch | Text


@closed
class MatrixKimiK3(TypedDict):
    entry_classes: list[Text]
    model_file: bool


@open_
class MatrixRow(TypedDict):
    sglang: Version
    bindings: dict[Text, MatrixBindings]
    verify: dict[Text, dict[Text, MatrixVerify]]
    aiter: MatrixAiter
    kimi_k3: MatrixKimiK3


@closed
class ReleaseMatrixDoc(TypedDict):
    vocab: PosInt
    draft_tokens: PosInt
    platforms: Annotated[list[Text], Field(min_length=1)]
    mixes: Annotated[list[Text], Field(min_length=1)]
    method: dict[Text, Text]
    rows: Annotated[list[MatrixRow], Field(min_length=1)]


class ReleaseMatrix(JsonFile):
    """Releases oldest first, each once; every row covers every platform and request mix;
    a verify run is 'ok' exactly when it has no error; the AITER backend refuses 12 heads
    exactly when it says why (and then has no 12-head mode); the default-backend choice
    names its selector and the TP8 case."""

    schema = ReleaseMatrixDoc

    @classmethod
    def check(cls, doc):
        vs = [r["sglang"] for r in doc["rows"]]
        if vs != sorted(vs, key=version_key) or len(set(vs)) != len(vs):
            raise ValueError(f"rows: releases must be oldest first, each once (got {vs})")
        plats, mixes = set(doc["platforms"]), set(doc["mixes"])
        for i, r in enumerate(doc["rows"]):
            at = f"rows.{i}"
            for key in ("bindings", "verify"):
                if set(r[key]) != plats:
                    raise ValueError(f"{at}.{key}: platforms {sorted(r[key])} != {sorted(plats)}")
            for p, per_mix in r["verify"].items():
                if set(per_mix) != mixes:
                    raise ValueError(f"{at}.verify.{p}: request mixes differ from the matrix's mixes")
                for m, v in per_mix.items():
                    _outcome_rules(f"{at}.verify.{p}.{m}", v)
                    if (v["outcome"] == "ok") != (v["random_matches_reference"] is not None):
                        raise ValueError(f"{at}.verify.{p}.{m}.random_matches_reference: a comparison exactly "
                                         f"when the run is ok (outcome {v['outcome']!r})")
            a = r["aiter"]
            if a["accepts_12"] == bool(a["error_12"]):
                raise ValueError(f"{at}.aiter.error_12: an error exactly when 12 heads are refused "
                                 f"(accepts_12 is {a['accepts_12']})")
            if a["accepts_12"] != (a["mode_12"] is not None):
                raise ValueError(f"{at}.aiter.mode_12: a 12-head mode exactly when 12 heads are accepted")
            for k in ("selector", TP8_KEY):
                if k not in a["default_backend_on_hip"]:
                    raise ValueError(f"{at}.aiter.default_backend_on_hip: missing {k!r}")


# --------------------------------------------------------------------------- sglang_0523_k3_rank_bytes.json


@closed
class RankTensor(TypedDict):
    bytes: NonNegInt
    bytes_each: NonNegInt
    copies: PosInt
    dtype: Text
    k3lab_tensor: str | None   # None: a tensor k3lab has no name for (recorded as such)
    kind: Text
    layers: str
    name: Text
    numel: NonNegInt
    shape: list[NonNegInt]


@open_
class RankPostLoad(TypedDict):
    ran: bool
    resident_bytes: NonNegInt
    runtime_bytes: NonNegInt
    merge_padding_bytes: NonNegInt


@open_
class RankTotals(TypedDict):
    bytes: NonNegInt
    parameter_bytes: NonNegInt
    buffer_bytes: NonNegInt
    tensors: NonNegInt


@open_
class RankCase(TypedDict):
    env: dict[Text, str]
    flipped_flags: list[Text]
    flipped_flags_total: NonNegInt
    platform: Text
    platform_label: Text
    post_load: RankPostLoad
    process_weights_after_loading: dict
    resolved: dict
    server_args: dict
    sglang_version: Version
    stubs: list[Text]
    tensors: Annotated[list[RankTensor], Field(min_length=1)]
    totals: RankTotals
    world_rank: NonNegInt


@closed
class RankHeaviest(TypedDict):
    GiB: NonNeg
    bytes: NonNegInt
    case: Text
    loaded_GiB: NonNeg
    loaded_bytes: NonNegInt
    post_load_merge_padding_bytes: NonNegInt
    post_load_runtime_bytes: NonNegInt
    pp_rank: NonNegInt
    process_weights_delta_bytes: NonNegInt | None
    resident_after_post_load_GiB: NonNeg
    resident_after_post_load_bytes: NonNegInt
    world_rank: NonNegInt


@closed
class RankBytesDoc(TypedDict):
    what: Text
    sglang_version: Version
    model_class: Text
    quantization_config_source: Text
    bytes_note: Text
    layouts: dict[Text, dict]
    platform_cases: list[dict]
    cases: dict[Text, RankCase]
    heaviest: dict[Text, RankHeaviest]
    rank_checks: dict[Text, dict]
    expected_failures: list[dict]


class RankBytes(JsonFile):
    """Each tensor's bytes = bytes per copy × copies; a case's flipped flags no more than
    their total; every heaviest-rank entry names a case of the transcript and agrees with it."""

    schema = RankBytesDoc

    @classmethod
    def check(cls, doc):
        for key, c in doc["cases"].items():
            if len(c["flipped_flags"]) > c["flipped_flags_total"]:
                raise ValueError(f"cases.{key}.flipped_flags_total: {c['flipped_flags_total']} is fewer than the "
                                 f"{len(c['flipped_flags'])} flags listed")
            for i, t in enumerate(c["tensors"]):
                if t["bytes"] != t["bytes_each"] * t["copies"]:
                    raise ValueError(f"cases.{key}.tensors.{i}.bytes: {t['bytes']} != bytes_each × copies "
                                     f"({t['bytes_each']} × {t['copies']})")
        for key, h in doc["heaviest"].items():
            if h["case"] not in doc["cases"]:
                raise ValueError(f"heaviest.{key}.case: {h['case']!r} is not a case of the transcript")
            if h["bytes"] != doc["cases"][h["case"]]["totals"]["bytes"]:
                raise ValueError(f"heaviest.{key}.bytes: {h['bytes']} != cases.{h['case']}.totals.bytes")
            if h["loaded_bytes"] < h["bytes"]:
                raise ValueError(f"heaviest.{key}.loaded_bytes: {h['loaded_bytes']} < bytes {h['bytes']}")

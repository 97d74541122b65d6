"""A DSpark answer a renter can read (the renter's report, Q3): the field's acceptance in groups by the
prompts its runs used, the same question without DSpark and the acceptance at which DSpark breaks even
(an answer equal to the no-DSpark one is that break-even, and says so), and predict's JSON flags that
say "validated" only where the printed band holds."""

import json
import statistics
import subprocess
import sys

import pytest
import yaml

from k3lab import data
from k3lab.paths import REPO_ROOT
from k3lab.serving import dspark_answer, dspark_checks, field, measured_bounds
from k3lab.serving.model import NO_SPEC, Spec, Workload
from k3lab.serving.predict import predict
from k3lab.specs import load_model, parse_layout

CFG = load_model("kimi-k3")
B300 = parse_layout("8xb300 tp8")
MI355X = parse_layout("8xmi355x tp8")
#: the report's question: 8xB300, c32, 8,192 / 1,024, DSpark
WORK = Workload(8192, 1024, 32)


@pytest.fixture(scope="module")
def fit_yaml():
    return yaml.safe_load((REPO_ROOT / "data" / "serving_fit.yaml").read_text(encoding="utf-8"))


def _family_values(fit_yaml, family):
    return sorted((r["value"], r["id"]) for r in fit_yaml["accept_lengths"] if r["family"] == family)


def test_the_blackwell_acceptances_split_into_two_groups_by_their_prompts(fit_yaml):
    vals = _family_values(fit_yaml, "nvidia-blackwell")
    # the widest step between neighbours, by hand: every ratio of consecutive values
    steps = [(b[0] / a[0], i + 1) for i, (a, b) in enumerate(zip(vals, vals[1:]))]
    gap, at = max(steps)
    assert gap > field.GROUP_GAP
    low, high = vals[:at], vals[at:]
    groups = field.accept_groups("nvidia-blackwell")
    assert len(groups) == 2
    for g, part in zip(groups, (low, high)):
        assert (g["low"], g["high"], g["runs"]) == (part[0][0], part[-1][0], len(part))
        assert g["median"] == pytest.approx(statistics.median(v for v, _ in part), abs=0.005)
    # what each group's runs prompted with, from the public measurements themselves
    by_id = {m.id: m for m in data.load("public_measurements").measurements}
    for g, part in zip(groups, (low, high)):
        srcs = {by_id[i].source for _, i in part}
        assert {s for v in g["prompts"].values() for s in v} == srcs
    assert any("non-repetitive" in p for p in groups[0]["prompts"])
    assert any("repeated passage" in p for p in groups[1]["prompts"])
    # one repository ran both: the prompts, not the GPU, set the acceptance
    both = {s for v in groups[0]["prompts"].values() for s in v} & {s for v in groups[1]["prompts"].values() for s in v}
    assert both == {"kernelore_gcp_b200"}


def test_without_a_wide_step_the_field_is_one_group(fit_yaml):
    vals = [v for v, _ in _family_values(fit_yaml, "amd-cdna4")]
    assert max(b / a for a, b in zip(vals, vals[1:])) <= field.GROUP_GAP
    (g,) = field.accept_groups("amd-cdna4")
    assert (g["low"], g["high"], g["runs"]) == (vals[0], vals[-1], len(vals))


def test_the_break_even_acceptance_is_where_dspark_meets_no_dspark():
    a = dspark_answer.answer(CFG, B300, WORK, Spec("dspark", 2.22))
    plain = predict(CFG, B300, WORK, NO_SPEC).output_tok_s
    assert a.plain.output_tok_s == pytest.approx(plain)
    even = a.breakeven
    assert 1.0 < even < Spec("dspark", 2.0).draft_tokens + 1
    # just below it DSpark is slower than no DSpark, just above it faster (0.02: four times the bisection's tolerance)
    assert predict(CFG, B300, WORK, Spec("dspark", even - 0.02)).output_tok_s < plain
    assert predict(CFG, B300, WORK, Spec("dspark", even + 0.02)).output_tok_s > plain
    # the speed fit's DSpark runs on this family, from the committed observations
    seen = [o.accept_len for o in __import__("k3lab.serving.committed", fromlist=["x"]).fitted_observations()
            if o.family == "nvidia-blackwell" and o.metric == "dspark"]
    assert a.speed_fit == tuple(sorted(set(seen)))
    # the same question at each group's median acceptance: the answer at either kind of prompt
    assert len(a.at_groups) == len(a.groups) == 2
    for g, q in zip(a.groups, a.at_groups):
        assert q.output_tok_s == pytest.approx(predict(CFG, B300, WORK, Spec("dspark", g["median"])).output_tok_s)
    # repetitive prompts pay (the higher group, far above the break-even); natural text does not
    assert a.at_groups[1].output_tok_s > 1.5 * a.plain.output_tok_s
    assert a.at_groups[0].output_tok_s < a.plain.output_tok_s * 1.01


@pytest.fixture(scope="module")
def runs():
    procs = {k: subprocess.Popen([sys.executable, "-m", "k3lab", "predict", "--layout", "8xb300 tp8", "--input-len",
                                  "8192", "--output-len", "1024", "--concurrency", "32", "--spec", "dspark", *a],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
             for k, a in {"default": [], "json": ["--json"], "high": ["--accept-len", "6.4"],
                          "even": ["--accept-len", "2.22"]}.items()}
    return {k: p.communicate(timeout=300) for k, p in procs.items()}


def test_the_text_explains_the_groups_and_names_the_break_even(runs):
    out, err = runs["default"]
    assert err == ""
    flat = " ".join(out.split())
    groups = field.accept_groups("nvidia-blackwell")
    for g in groups:
        assert f"{g['low']:g}-{g['high']:g} (median {g['median']:g}, {g['runs']} runs;" in flat
    assert f"plan real traffic (chat, code, agents) on the lower group (--accept-len {groups[0]['median']:g})" in flat
    # with no --accept-len the question plans on the lower group's median (what real traffic gets),
    # read here from the committed fit's list: split at the one step wider than x1.5, median below it
    vals = sorted(v for _, v in field.accept_lengths("nvidia-blackwell"))
    cut = next(i + 1 for i, (a, b) in enumerate(zip(vals, vals[1:])) if b / a > 1.5)
    low = round(statistics.median(vals[:cut]), 2)
    assert (f"DSpark at {low:g} tokens per verify step, the median of the {cut} of {len(vals)} public Kimi K3 runs "
            "(nvidia-blackwell's own) on prompts that do not repeat, what real traffic gets") in flat
    assert f"{low:g} sits in the lower group" in flat
    seen = sorted({o.accept_len for o in __import__("k3lab.serving.committed", fromlist=["x"]).fitted_observations()
                   if o.family == "nvidia-blackwell" and o.metric == "dspark"})
    assert f"The speed fit saw DSpark runs at {', '.join(f'{v:g}' for v in seen)} tokens per step only" in flat
    hi = predict(CFG, B300, WORK, Spec("dspark", groups[-1]["median"]))
    plain = predict(CFG, B300, WORK)
    at_low = predict(CFG, B300, WORK, Spec("dspark", low))
    # the answer comes first, in words: natural text does not pay at this load, the higher group does
    assert at_low.output_tok_s < plain.output_tok_s
    assert (f"does DSpark help here? no: x{at_low.output_tok_s / plain.output_tok_s:.2f} against no "
            f"DSpark at the same 32 requests ({at_low.output_tok_s:,.0f} vs {plain.output_tok_s:,.0f} tok/s") in flat
    # newcomer 20: "a coin flip, could hurt by up to 40%" had to be assembled from two more runs; the answer spans
    # the group the acceptance lies in (the lower one's ends, each a prediction of its own)
    g0 = groups[0]
    x0, x1 = (predict(CFG, B300, WORK, Spec("dspark", a)).output_tok_s / plain.output_tok_s
              for a in (g0["low"], g0["high"]))
    assert x0 < 1 < x1 or x1 < 1
    assert (f"at {low:g} tokens per step, x{x0:.2f}-{x1:.2f} across the lower group's {g0['low']:g}-{g0['high']:g} "
            + (f"(from {1 - x0:.0%} slower to {x1 - 1:.0%} faster)" if x1 > 1 else "(slower across it)")) in flat
    # ... with its caveat in the same sentence: 2 lies outside the acceptance the speed fit saw (no band there)
    assert (f"By the model's extrapolation (no band: its DSpark runs accepted {seen[0]:g}-{seen[-1]:g}, not {low:g}; "
            "checked on natural text: below).") in flat
    assert (f"at the higher group's {groups[-1]['median']:g}: x{hi.output_tok_s / plain.output_tok_s:.2f} "
            f"({hi.output_tok_s:,.0f} tok/s, TPOT {hi.tpot_ms:,.1f} ms)") in flat
    assert flat.index("does DSpark help here?") < flat.index("DSpark acceptance:")
    # 970 vs 969 tok/s at the break-even: said as such
    even, _ = runs["even"]
    assert "does DSpark help here? no difference (the break-even, not a bug): x1.00" in " ".join(even.split())
    assert "By the model's extrapolation" in " ".join(even.split())
    assert "not a bug" not in out
    high, _ = runs["high"]
    assert "not a bug" not in high and "6.4 sits in the higher group" in " ".join(high.split())


def test_where_dspark_is_extrapolated_the_answer_says_what_to_plan_on(runs):
    """Newcomer 9, Q3: at natural-text acceptance DSpark's figures have no band, and TTFT was the same with and
    without DSpark with no word why. The answer names the question without DSpark with its validated band (the
    same predict, computed here), what the extrapolation moves it by, and why TTFT does not move; at an
    acceptance the speed fit saw, DSpark's own band holds and no such line is printed."""
    import math

    from k3lab.serving.committed import fitted_bands

    out, _ = runs["default"]
    flat = " ".join(out.split())
    low = field.accept_groups("nvidia-blackwell")[0]["median"]
    plain, at = predict(CFG, B300, WORK), predict(CFG, B300, WORK, Spec("dspark", low))
    b = fitted_bands("nvidia-blackwell")["decode"].band_log   # the decode band, the question without DSpark
    tok = (plain.output_tok_s * math.exp(-b), plain.output_tok_s * math.exp(b))
    tpot = (plain.tpot_ms * math.exp(-b), plain.tpot_ms * math.exp(b))
    assert at.ttft_ms == pytest.approx(plain.ttft_ms)
    plan = dspark_answer.plan_on(at, dspark_answer.answer(CFG, B300, WORK, Spec("dspark", low)))
    assert plan == (f"plan on: {plain.output_tok_s:,.0f} output tok/s ({tok[0]:,.0f}-{tok[1]:,.0f}) and TPOT "
                    f"{plain.tpot_ms:,.1f} ms ({tpot[0]:,.1f}-{tpot[1]:,.1f}), the question without DSpark, whose band is "
                    f"validated; DSpark at {low:g} tokens per step moves them by "
                    f"x{at.output_tok_s / plain.output_tok_s:.2f} if it behaves as the model extrapolates (no band); TTFT "
                    f"{plain.ttft_ms / 1000:,.1f} s either way (not validated; the model prices the prefill without the "
                    "draft's own pass over the prompt).")
    # newcomer 24 ("plan on 969" three times): the CLI says it as the summary table's first row, with the same bands,
    # the tok/s one narrowed to what the measured latencies allow (newcomer 51; test_measured_bounds has the numbers)
    rate = measured_bounds.throughput(plain, {"ttft_ms": (3539, 3539 * 2 * measured_bounds.slack("ttft_ms")),
                                              "tpot_ms": (19.47, 2 * 19.47)})
    assert tok[0] < rate[0] < plain.output_tok_s < rate[1] < tok[1]
    # (newcomers 48, 52: why no band, only in the full output): the acceptances the speed fit saw, from the committed fit
    seen = {o.accept_len for o in __import__("k3lab.serving.committed", fromlist=["x"]).fitted_observations()
            if o.family == "nvidia-blackwell" and o.metric == "dspark"}
    lo_seen, hi_seen = min(seen), max(seen)
    assert (f"plan on the first row, without it (DSpark at {low:g}: no band, fitted on {lo_seen:g}-{hi_seen:g}; "
            f"{dspark_checks.check_brief('nvidia-blackwell')}): "
            f"output tok/s TPOT ms TTFT s "
            f"vs without without DSpark {plain.output_tok_s:,.0f} ({rate[0]:,.0f}-{rate[1]:,.0f}) {plain.tpot_ms:,.1f} "
            f"(19.5-38.9) 3.5-8.0 DSpark at {low:g} (natural text) "   # the c16 runs' bounds (test_measured_bounds)
            f"{at.output_tok_s:,.0f} {at.tpot_ms:,.1f}") in flat and tpot[0] < 19.47 and tpot[1] > 2 * 19.47
    assert flat.index("in short:") < flat.index("does DSpark help here?") < flat.index("measured: ")
    high, _ = runs["high"]
    # 6.4: inside what the speed fit saw, DSpark's own band: the plan is DSpark's
    assert "plan on: " not in high and "in short: DSpark pays here; plan on DSpark at 6.4:" in high


def test_json_says_validated_only_where_the_band_holds(runs):
    """The report's Q3: `ttft_in_validated_domain: true` beside "TTFT not validated" in the text."""
    out, err = runs["json"]
    d = json.loads(out)
    p = predict(CFG, B300, WORK, Spec("dspark", d["accept_len"]))
    # the family's TTFT band is not validated: no validated domain for TTFT, and the reason is named
    assert p.band_of("ttft_ms") is None
    assert d["ttft_in_validated_domain"] is False and d["validated"]["ttft_ms"] is False
    assert any("TTFT is not validated for nvidia-blackwell" in w for w in d["ttft_outside_validated_domain"])
    # DSpark speed: the family's band is validated, but the default 2 lies outside the acceptance it was measured at
    assert d["band_validated"]["output_tok_s"] is True and p.outside
    assert d["validated"]["output_tok_s"] is False and d["speed_in_validated_domain"] is False
    assert d["outside_validated_domain"] == list(p.outside) and d["in_validated_domain"] is False
    assert d["without_dspark"]["output_tok_s"] == pytest.approx(predict(CFG, B300, WORK).output_tok_s)
    assert d["accept_len_breakeven"] == dspark_answer.answer(CFG, B300, WORK, Spec("dspark", 2.22)).breakeven
    assert d["accept_len"] == field.accept_groups("nvidia-blackwell")[0]["median"]
    for g in d["accept_len_groups"]:
        want = predict(CFG, B300, WORK, Spec("dspark", g["median"]))
        assert g["at_median"]["output_tok_s"] == pytest.approx(want.output_tok_s)


@pytest.mark.parametrize("dep, work, spec", [
    (MI355X, Workload(8192, 1024, 16), NO_SPEC), (B300, WORK, NO_SPEC), (B300, WORK, Spec("dspark", 6.4)),
    (MI355X, Workload(8192, 1024, 16), Spec("dspark", 3.0))])
def test_a_validated_flag_means_a_validated_band_inside_its_domain(dep, work, spec):
    p = predict(CFG, dep, work, spec)
    d = p.as_dict()
    for kind, ok in d["validated"].items():
        assert ok == (p.band_of(kind) is not None and not p.gaps(kind)), kind
    assert d["in_validated_domain"] == (d["validated"]["output_tok_s"] and d["validated"]["ttft_ms"])
    # every "no" names why
    assert bool(d["outside_validated_domain"]) != d["speed_in_validated_domain"]
    assert bool(d["ttft_outside_validated_domain"]) != d["ttft_in_validated_domain"]


def test_dspark_says_each_sides_concurrency_when_they_differ():
    """Attack 3 (M13): at 200 clients on the MI355X, DSpark runs 45 at once (its draft's memory and 48-request
    cap) and no DSpark 121; the line said 'at the same 121 requests'."""
    p = predict(CFG, MI355X, Workload(1024, 400, 200), Spec("dspark", 2.63), variants=("aiter-k3-opt",))
    a = dspark_answer.answer(CFG, MI355X, Workload(1024, 400, 200), Spec("dspark", 2.63), ("aiter-k3-opt",))
    assert p.concurrency < a.plain.concurrency
    v = dspark_answer.verdict(p, a)
    assert "at the same" not in v
    assert (f"of your 200 clients (DSpark runs {p.concurrency:,} at once, its draft's memory and request cap; no DSpark "
            f"{a.plain.concurrency:,})") in v


def test_dspark_on_a_one_token_output_is_refused():
    """Attack 3 (S2): a 1-token output has no decode step; the DSpark answer priced TPOTs and a break-even."""
    r = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xb300 tp8", "--input-len", "1024",
                        "--output-len", "1", "--concurrency", "8", "--spec", "dspark"], capture_output=True, text=True,
                       cwd=REPO_ROOT, timeout=300)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "--spec dspark with --output-len 1" in r.stderr and "drop --spec" in r.stderr


def test_the_answer_names_what_the_nearest_public_dspark_run_measured():
    """Newcomer 6, Q3: the DSpark speed at natural-text acceptance has no band, and the one public B300 DSpark run
    at the question's lengths and concurrency sat far from the model, listed only at the bottom. The answer now says
    right under its verdict what that run measured (from data/public_measurements.yaml, read here by id) and how the
    model reads it."""
    spec = Spec("dspark", 2.0, 7)
    p = predict(CFG, B300, WORK, spec)
    text = dspark_answer.nearest_dspark_run(p)
    doc = yaml.safe_load((REPO_ROOT / "data" / "public_measurements.yaml").read_text(encoding="utf-8"))
    rows = {m["id"]: m for m in doc["measurements"]}
    first = next(n for n in p.nearest if n["accept_len"] is not None)
    assert first["layout"] == "8×B300 TP8+DCP8" and first["workload"].startswith("8192/1024 c32 DSpark")
    tok = next(n for n in p.nearest if n["accept_len"] is not None and n["kind"] == "output_tok_s")
    assert rows[tok["id"]]["value"] == pytest.approx(tok["value"], rel=1e-6)
    assert text.startswith(f"measured: the nearest public DSpark run, B300 8×B300 TP8+DCP8 at {first['workload']} ")
    assert f"served {tok['value']:,.0f} output tok/s" in text
    # ... and how it differs from the question (newcomer 10: its 22 running requests against your 32), from the run's
    # own admitted requests and acceptance
    ran = min(first["concurrency"], first["admitted"])
    assert ran == 22 and f"({first['source']}; {ran} of its 32 clients running at once (yours 32), acceptance {first['accept_len']:g} (yours 2))" in text
    assert f"the model puts that run at {tok['fitted']:,.0f} output tok/s" in text
    # the model reads that run fast (1,828 against 1,333): the sentence says which way to read its figures
    assert tok["fitted"] > 1.1 * tok["value"]
    # ... at that run's acceptance (6.4, not the question's 2: at natural-text acceptance the checks lean the other way)
    assert text.endswith(f"the model runs x{tok['fitted'] / tok['value']:.2f} too fast there, so read its DSpark "
                         f"figures at {first['accept_len']:g} tokens a step as high")
    # the CLI prints it right under the verdict
    out = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xb300 tp8", "--input-len", "8192",
                          "--output-len", "1024", "--concurrency", "32", "--spec", "dspark"], capture_output=True,
                         text=True, cwd=REPO_ROOT, timeout=300).stdout
    flat = " ".join(x.strip() for x in out.splitlines())
    assert flat.index("does DSpark help here?") < flat.index("measured: the nearest public DSpark run") < flat.index(
        "checked on natural text (") < flat.index("DSpark acceptance:")   # the measurement first (newcomer 29)
    # newcomer 15: the answer first (help? plan on, measured), the acceptance groups behind it after the table
    assert flat.index("in short:") < flat.index("output tok/s, deployment") < flat.index("DSpark acceptance:")
    # the run the measured line states is not listed again below (each of its figures is in that line already)
    assert "nearest public measurements" not in flat and first["id"] not in out
    # none listed: no sentence
    assert dspark_answer.nearest_dspark_run(predict(CFG, B300, WORK)) == "" or not any(
        n["accept_len"] is not None for n in predict(CFG, B300, WORK).nearest)


def test_attack_5_a_small_block_prices_the_higher_group_at_what_it_allows():
    """Attack 5 (C3): --block-size 2-5 on Blackwell was refused ('accept_len must be in [1, 5] ... got 6.4'): the
    answer priced the higher group's median past what the block emits. It prices it at block + 1 and says so."""
    r = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xb300 tp8", "--input-len", "1024",
                        "--output-len", "400", "--concurrency", "16", "--spec", "dspark", "--block-size", "4"],
                       capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    flat = " ".join(r.stdout.split())
    hi = field.accept_groups("nvidia-blackwell")[-1]["median"]
    q = predict(CFG, B300, Workload(1024, 400, 16), Spec("dspark", 5.0, 4))
    plain = predict(CFG, B300, Workload(1024, 400, 16))
    assert (f"at the higher group's {hi:g} (5 at most with this block): x{q.output_tok_s / plain.output_tok_s:.2f} "
            f"({q.output_tok_s:,.0f} tok/s") in flat


def test_attack_5_dspark_without_any_band_is_hedged_and_planned_on_without_it():
    """Attack 5 (M2, M3): on the MI355X DSpark is not validated at all; its 'no' was unhedged and no 'plan on' line
    named the figures with a band; a validated TTFT left a bracket '(; the model ...'."""
    mi = parse_layout("8xmi355x tp8")
    work = Workload(1024, 400, 16)
    p = predict(CFG, mi, work, Spec("dspark", 2.63), variants=("aiter-k3-opt",))
    a = dspark_answer.answer(CFG, mi, work, Spec("dspark", 2.63), ("aiter-k3-opt",))
    assert p.band_of("output_tok_s") is None
    assert dspark_answer.verdict(p, a).endswith("By the model alone (no band: DSpark is not validated on amd-cdna4).")
    plan = dspark_answer.plan_on(p, a)
    assert plan.startswith(f"plan on: {a.plain.output_tok_s:,.0f} output tok/s (") and "as the model says (no band)" in plan
    assert a.plain.validated("ttft_ms") and "(;" not in plan and plan.endswith(
        "either way (the model prices the prefill without the draft's own pass over the prompt).")


def test_a_question_right_at_the_admission_cap_says_what_binds():
    """Newcomer 16: with DSpark the B300 'admits 32' at 8,192 / 1,024 (87 without it) and no reason was given where
    the question asked exactly 32; the admission note is said at the cap as well as past it."""
    p = predict(CFG, B300, Workload(8192, 1024, 32), Spec("dspark", 2.0))
    assert p.admitted == 32 == p.concurrency and p.admission_note
    out = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xb300 tp8", "--input-len", "8192",
                          "--output-len", "1024", "--concurrency", "32", "--spec", "dspark"], capture_output=True,
                         text=True, cwd=REPO_ROOT, timeout=300).stdout
    assert f"  the pools admit 32: {p.admission_note}" in out.splitlines()
    assert predict(CFG, B300, Workload(8192, 1024, 32)).admitted > 32   # without DSpark the pools admit more


def test_the_setting_trap_under_dspark_is_computed_with_dspark():
    """Attack 6: under --spec dspark the K3_OPT line quoted figures without DSpark (324 against 309 output tok/s at c8)
    beside a DSpark table (233). The trap is computed with the question's speculative setting; MI35x DSpark has no
    validated band, so no throughput is claimed there, and what memory decides (the full-context request) stays."""
    from k3lab import setting_traps
    from k3lab.specs import parse_layout

    lay, spec = parse_layout("8xmi355x tp8"), Spec("dspark", 2.0)
    assert not predict(CFG, lay, Workload(1024, 400, 8), spec).validated()
    (t,) = setting_traps.traps(CFG, lay, 1024, 400, concurrency=8, spec=spec)
    assert "output tok/s" not in t.sentence and t.sentence.endswith("holds a 1,048,576-token request")
    # without DSpark the same question's trap does quote throughput (validated there)
    plain = setting_traps.traps(CFG, lay, 1024, 400, concurrency=8)
    assert "output tok/s" in plain[0].sentence
    out = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xmi355x tp8", "--input-len", "1024",
                          "--output-len", "400", "--concurrency", "8", "--spec", "dspark", "--accept-len", "2"],
                         capture_output=True, text=True, cwd=REPO_ROOT, timeout=300).stdout
    assert f"  a setting that changes the answer: {t.sentence}" in out.splitlines()


def test_the_dspark_table_says_it_is_dspark_and_why_admission_drops():
    """Newcomers 17 and 18: 'plan on' gives the figures without DSpark and the table those with it (easy to quote the
    wrong one); and why DSpark admits 32 where 87 run without it was opaque. The table's head says 'with DSpark',
    and the admission note says the state pool also keeps each request's draft tokens' verify states."""
    out = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xb300 tp8", "--input-len", "8192",
                          "--output-len", "1024", "--concurrency", "32", "--spec", "dspark"], capture_output=True,
                         text=True, cwd=REPO_ROOT, timeout=300).stdout.splitlines()
    head = next(i for i, x in enumerate(out) if x.strip().startswith("with DSpark") and x.rstrip().endswith("band"))
    assert out[head + 1].startswith("  output tok/s, deployment")
    note = next(x for x in out if x.startswith("  the pools admit 32: "))
    assert "which with DSpark also keeps each request's draft tokens' verify states, so it holds fewer" in note
    plain = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xb300 tp8", "--input-len", "8192",
                            "--output-len", "1024", "--concurrency", "32"], capture_output=True, text=True,
                           cwd=REPO_ROOT, timeout=300).stdout
    assert "with DSpark" not in plain and "predicted" in plain


def test_the_runs_on_your_own_setup_show_what_dspark_did_there():
    """Newcomer 63: the c16 runs that bound Q3's TTFT "never show their speed" (TPOT 9.88 ms with DSpark against 19.47
    without, at 4.5): the brief answer says what they measured and what the model fitted on them gives there and on
    the question, from the committed public runs (in sample: a reading, not a check)."""
    from k3lab.serving import committed

    obs = {o.id: o for o in committed.fitted_observations()}
    ds, no = obs["sglang_pr37878_b300_ll_mxfp4_dspark_tokps_gpu_c16"], obs["sglang_pr37878_b300_ll_mxfp4_nospec_tokps_gpu_c16"]
    t_ds, t_no = obs["sglang_pr37878_b300_ll_mxfp4_dspark_tpot_c16"], obs["sglang_pr37878_b300_ll_mxfp4_nospec_tpot_c16"]
    low = field.accept_groups("nvidia-blackwell")[0]["median"]
    a = dspark_answer.answer(CFG, B300, WORK, Spec("dspark", low))
    p = predict(CFG, B300, WORK, Spec("dspark", low))
    line = dspark_answer.same_setup_gain(p, a)
    assert line == (f"measured on your layout and lengths at c16 (sglang_pr37878): DSpark accepting {ds.accept_len:g} "
                    f"tokens a step served {ds.value:,.0f} output tok/s against {no.value:,.0f} without "
                    f"(x{ds.value / no.value:.2f}; TPOT {t_ds.value:.1f} against {t_no.value:.1f} ms); the model, fitted "
                    f"on these runs, gives x{ds.fitted / no.fitted:.2f} there and "
                    f"x{p.output_tok_s / predict(CFG, B300, WORK).output_tok_s:.2f} at your {low:g} (c32).")
    assert ds.value / no.value > 1.5 > p.output_tok_s / predict(CFG, B300, WORK).output_tok_s   # it paid at 4.5
    # the same grouping as the measured bounds: a question with an fp8 KV cache is not those bf16 runs' setup
    assert dspark_answer.same_setup_gain(p, a, kv_dtype="fp8") == "" and dspark_answer.same_setup_gain(
        p, a, kernel="fallback") == ""
    # no such pair on a layout no public run measured both ways: nothing said
    other = parse_layout("8xb300 tp8")
    q = predict(CFG, other, Workload(3000, 700, 8), Spec("dspark", low))
    assert dspark_answer.same_setup_gain(q, dspark_answer.answer(CFG, other, Workload(3000, 700, 8),
                                                                 Spec("dspark", low))) == ""

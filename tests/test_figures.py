"""The figures' behaviour a reader relies on, checked without looking at pixels: one colour per
deployment everywhere, legends that list what is drawn, no derived point passed off as the
article's, "not validated" drawn without a band, whole-number ticks for counts, legends that
cover no line. Inputs are small hand-made frames in the shape the notebooks pass, unless the
test is about the study's own data (the article's points, the committed serving-model fit)."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.legend import Legend  # noqa: E402

from k3lab import claims, figures, report, report_html, roofline  # noqa: E402
from k3lab.figures import field as fig_field  # noqa: E402
from k3lab.figures import memory as fig_memory  # noqa: E402
from k3lab.figures import throughput as fig4  # noqa: E402

MI, B300, B200 = "8×MI355X TP8", "8×B300 TP8+DCP8", "16×B200 TP16"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def legends(fig) -> list[Legend]:
    return [a for ax in fig.axes for a in ax.get_children() if isinstance(a, Legend)] + list(fig.legends)


def legend_labels(leg) -> list[str]:
    return [t.get_text() for t in leg.get_texts()]


def texts(fig) -> str:
    return "\n".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


def fills(ax) -> set[str]:
    """Colours of the shaded bands (fill_between) of an axes."""
    return {to_hex(c.get_facecolor()[0], keep_alpha=False) for c in ax.collections if isinstance(c, PolyCollection)}


# ---------------------------------------------------------------- the palette

def test_one_fixed_colour_per_deployment_and_one_palette():
    cols = [figures.deployment_color(d) for d in (MI, B300, "8×B300 TP8", B200, "16×B200 TP8×PP2")]
    assert len(set(cols)) == 5                                      # every deployment its own colour
    assert figures.deployment_color(MI) == figures.GPU_COLORS["mi355x"]  # the article's rows: their GPU's hue
    assert figures.deployment_color("32×B300 TP8×PP4") == figures.GPU_COLORS["b300"]  # unknown layout: GPU hue
    assert figures.deployment_color("a table") == "#757575"
    assert fig_field.GPU_COLORS is figures.GPU_COLORS               # no second palette in the field figures


# ---------------------------------------------------------------- throughput_models.png

def _curves():
    rows = []
    for dep, label, scale in (("mi", MI, 1.0), ("b300", B300, 1.6)):
        rows += [{"deployment": dep, "label": label, "concurrency": float(c), "tok_s_bound_plain": 200 * c * scale,
                  "tok_s_bound_spec": 900 * c * scale} for c in (1, 4, 16, 64)]
    return pd.DataFrame(rows)


def _aic():
    rows = []
    for net in (800.0, 195.0):
        rows += [{"gpu": "b200", "num_gpus": 16, "tp": 16, "pp": 1, "scale_out_gbit_s_per_gpu": net, "mode": "silicon",
                  "concurrency": c, "tok_s": net / 10 * c} for c in (1, 8, 64)]
    rows += [{"gpu": "b300", "num_gpus": 8, "tp": 8, "pp": 1, "scale_out_gbit_s_per_gpu": 195.0, "mode": "sol",
              "concurrency": c, "tok_s": 300 * c} for c in (1, 8, 64)]
    return pd.DataFrame(rows)


SERVING = [("serving model", MI, [(1, 50.0, 45.0, 55.0), (64, 1200.0, 1100.0, 1300.0), (121, 1800.0, 1650.0, 1950.0)]),
           ("serving model", B200, [(1, 40.0, math.nan, math.nan), (108, 1350.0, math.nan, math.nan)])]


def _panels(fig) -> dict:
    """The throughput figure's visible panels by their title (the deployment)."""
    return {ax.get_title(): ax for ax in fig.axes if ax.get_visible() and ax.get_title()}


def test_throughput_one_panel_per_deployment_in_its_colour_and_one_legend_of_models():
    fig = fig4.throughput_figure(_curves(), roofline.bounds_for_measured(), _aic(), serving=SERVING)
    panels = _panels(fig)
    # each deployment its own panel, titled in its fixed colour: the roofline's two, aiconfigurator's B200 and B300
    # (it models no DCP, so 8×B300 TP8), the serving model's B200 and the article's three rows
    assert sorted(panels) == sorted([MI, B300, "8×B300 TP8", B200])
    for title, ax in panels.items():
        assert to_hex(ax.title.get_color()) == figures.deployment_color(title)
    (models,) = legends(fig)
    labels = legend_labels(models)
    assert len(labels) == len(set(labels))                       # no repeated entry
    assert any("roofline" in m for m in labels) and any("aiconfigurator silicon" in m for m in labels)
    assert any("speed-of-light" in m for m in labels) and any(m.startswith("serving model") for m in labels)
    assert any("not validated" in m for m in labels)             # the B200 curve has no band
    # a model has one colour in every panel: the roofline's lines are all the same, whatever the deployment
    roof = {to_hex(ln.get_color()) for ax in panels.values() for ln in ax.get_lines()
            if ln.get_linestyle() == "--" and len(ln.get_xdata()) == 4}
    assert roof == {fig4.MODEL_STYLES["roofline"][1]}
    # a deployment swept at two inter-node bandwidths says which curve is which, in its own panel
    assert "800 Gb/s/GPU" in texts(fig) and "195 Gb/s/GPU" in texts(fig)
    assert panels[B200].get_yscale() == "log" and panels[B200].get_ylim() == panels[MI].get_ylim()  # same axes


def test_throughput_article_points_are_its_table_rows_as_stars_in_their_colour():
    measured = roofline.bounds_for_measured()
    derived = measured[measured["point"] != measured["config"]]
    assert len(derived)  # the data has a derived point (952 / 1.18): the figure must leave it out
    fig = fig4.throughput_figure(_curves(), measured)
    panels = _panels(fig)
    stars = [(title, ln) for title, ax in panels.items() for ln in ax.get_lines() if ln.get_marker() == "*"]
    table = measured[measured["point"] == measured["config"]]
    assert sorted(float(ln.get_ydata()[0]) for _, ln in stars) == sorted(table["tok_s"].astype(float))
    for title, ln in stars:
        row = table[table["tok_s"].astype(float) == float(ln.get_ydata()[0])].iloc[0]
        assert row["label"] == title                               # in its deployment's panel
        assert to_hex(ln.get_markerfacecolor()) == figures.deployment_color(row["label"])
    for v in derived["tok_s"]:
        assert f"{v:,.0f}" not in texts(fig)
    assert "952 (article)" in texts(fig)


def test_throughput_serving_band_only_where_validated():
    fig = fig4.throughput_figure(_curves(), roofline.bounds_for_measured().head(0), serving=SERVING)
    panels = _panels(fig)
    assert fills(panels[MI]) == {figures.deployment_color(MI)}
    assert fills(panels[B200]) == set()                              # the B200 curve has no band
    b200 = [ln for ln in panels[B200].get_lines() if to_hex(ln.get_color()) == figures.deployment_color(B200)
            and len(ln.get_xdata()) == 2]
    assert b200 and b200[0].get_linestyle() != "-"                    # and is drawn dashed


# ---------------------------------------------------------------- perf_per_dollar.png

def _by_tier():
    rows = [("t1", "cost_model", MI, 5.0), ("t1", "cost_model", B300, 4.0), ("t1", "cost_model", B200, 20.0),
            ("t2", "on_demand", B300, 10.0), ("t2", "on_demand", B200, 50.0)]
    return pd.DataFrame([{"tier": t, "kind": k, "config": c, "usd_per_million_tokens": v} for t, k, c, v in rows])


def _model_table(electricity=0.0):
    rows = [("t1", "cost_model", MI, 2.0, 1.8, 2.2, True), ("t1", "cost_model", B300, 3.0, 2.5, 3.6, False),
            ("t2", "on_demand", B300, 8.0, 6.5, 9.5, False)]
    return pd.DataFrame([{"layout": c, "tier": t, "kind": k, "usd_per_million_tokens": v, "usd_per_million_tokens_low": lo,
                          "usd_per_million_tokens_high": hi, "in_domain": d, "electricity_usd_per_gpu_hour": electricity}
                         for t, k, c, v, lo, hi, d in rows])


def test_perf_per_dollar_shows_the_model_with_its_band_beside_the_article():
    fig = fig4.perf_per_dollar_figure(_by_tier(), _model_table())
    ax = fig.axes[0]
    hollow = [ln for ln in ax.get_lines() if ln.get_marker() == "o" and ln.get_markerfacecolor() in ("white", (1, 1, 1, 1))]
    # the axis spans the model's bands and the article's points of the deployments it validates (up to 10 x 1.6):
    # the B200's $20 and $50, which the model does not validate, are arrows at the edge with their value
    assert sorted(float(ln.get_xdata()[0]) for ln in hollow) == [4.0, 5.0, 10.0]
    assert ax.get_xlim()[1] == pytest.approx(10.0 * 1.6)
    arrows = [ln for ln in ax.get_lines() if ln.get_marker() == ">"]
    assert [float(ln.get_xdata()[0]) for ln in arrows] == [pytest.approx(10.0 * 1.6)] * 2
    bars = [c for c in ax.containers if hasattr(c, "has_xerr") and c.has_xerr]
    assert sorted(float(b.lines[0].get_xdata()[0]) for b in bars) == [2.0, 3.0, 8.0]        # the model's, each banded
    t = texts(fig)
    assert "$20 →" in t.replace("\\$", "$") and "$50 →" in t.replace("\\$", "$")
    assert t.count(f"{B200}: article") == 2 and t.count("model not validated") == 2   # the text column names each
    assert f"{MI}: article $5.00" in t.replace("\\$", "$")
    assert "model $2.00 ($1.80–$2.20)" in t.replace("\\$", "$")
    assert "model $3.00 ($2.50–$3.60) *" in t.replace("\\$", "$")  # outside the validated domain
    assert t.count("no price") >= 2                      # MI355X in t2: the hatched marker and the text column
    assert "electricity" not in t


def test_perf_per_dollar_says_when_the_model_includes_electricity_and_works_without_it():
    assert "include electricity" in texts(fig4.perf_per_dollar_figure(_by_tier(), _model_table(0.18)))
    fig = fig4.perf_per_dollar_figure(_by_tier())
    assert not [c for c in fig.axes[0].containers if getattr(c, "has_xerr", False)]
    assert "not validated" not in texts(fig)             # without a model table nothing is said of it
    with pytest.raises(ValueError, match="no priced config"):
        fig4.perf_per_dollar_figure(_by_tier().head(0))


# ---------------------------------------------------------------- the latency figure

def _latency_rows():
    rows = []
    for layout, n, validated in ((MI, 121, True), (B200, 108, False)):
        for c in (1, 32, n):
            ttft, tpot = 60.0 + 20 * c, 20.0 + c / 3
            rows.append({"layout": layout, "concurrency": c, "admitted": n, "ttft_ms": ttft,
                         "ttft_ms_low": ttft * 0.7 if validated else None, "ttft_ms_high": ttft * 1.4 if validated else None,
                         "ttft_in_domain": c == 1, "tpot_ms": tpot, "tpot_ms_low": tpot * 0.9 if validated else None,
                         "tpot_ms_high": tpot * 1.1 if validated else None, "tpot_in_domain": True})
    return rows


def test_latency_figure_two_panels_band_where_validated_and_admission_limit():
    fig = fig_field.latency_figure(_latency_rows())
    ttft, tpot = fig.axes
    for ax in (ttft, tpot):
        assert fills(ax) == {figures.deployment_color(MI)}
        labels = legend_labels(ax.get_legend()) if ax is ttft else legend_labels(legends(fig)[1])
        assert f"{MI}, pools admit 121" in labels
        assert f"{B200}, pools admit 108: not validated (no band)" in labels
        dashed = {to_hex(ln.get_color()) for ln in ax.get_lines() if ln.get_linestyle() == "--"}
        assert dashed == {figures.deployment_color(B200)}                # not validated: dashed throughout
        dotted = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
        # outside the domain the validated curve is dotted and unshaded (TTFT from c1 on); inside, solid
        assert len(dotted) == (2 if ax is ttft else 0)
        assert all(to_hex(ln.get_color()) == figures.deployment_color(MI) for ln in dotted)
        bars = [ln for ln in ax.get_lines() if ln.get_marker() == "|"]  # the admission limit ends each curve
        assert sorted(float(ln.get_xdata()[0]) for ln in bars) == [108, 121]
    assert ttft.get_yscale() == "log" and "TTFT" in ttft.get_ylabel() and "TPOT" in tpot.get_ylabel()
    assert "outside it: dotted, no band (the band says nothing there)" in texts(fig)  # hollow points at c32, c121
    with pytest.raises(ValueError, match="no rows"):
        fig_field.latency_figure([])


def test_latency_rows_of_the_article_layouts_from_the_committed_fit():
    from k3lab.findings import field as field_claims

    rows = field_claims.latency_rows()
    by = {}
    for r in rows:
        by.setdefault(r["layout"], []).append(r)
    assert list(by) == [MI, B300, B200]
    for layout, rs in by.items():
        cs = [r["concurrency"] for r in rs]
        assert cs == sorted(cs) and cs[0] == 1 and cs[-1] == rs[0]["admitted"]   # the curve ends at the limit
        assert all(a["tpot_ms"] < b["tpot_ms"] for a, b in zip(rs, rs[1:]))    # more in flight, slower steps
    # model v4: one Blackwell family validates decode (a TPOT band) but not TTFT (no band, never a made-up one);
    # the 16xB200 spans nodes, which one repository's runs do: its band is drawn outside the validated domain
    assert all(r[k] is None for r in by[B200] + by[B300] for k in ("ttft_ms_low", "ttft_ms_high"))
    for layout in (MI, B300, B200):
        assert all(r["tpot_ms_low"] < r["tpot_ms"] < r["tpot_ms_high"] for r in by[layout]), layout
    assert not any(r["tpot_in_domain"] for r in by[B200]) and any(r["tpot_in_domain"] for r in by[B300])


# ---------------------------------------------------------------- ttft_vs_context.png, aiconfigurator_memory.png

def test_ttft_legends_sit_below_their_panels():
    from k3lab import prefill, specs
    from k3lab.figures import prefill as fig3
    from k3lab.findings import f3_prefill as f3

    before, after = f3.ttft_models(specs.load_model("kimi-k3"))
    fig = fig3.ttft_figure(prefill.load_article(), before, after, [1000, 50_000, 172_000, 262_144])
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    for ax in fig.axes:
        assert ax.get_legend().get_window_extent(r).y1 < ax.get_window_extent(r).y0  # covers no line


def _aic_memory():
    return pd.DataFrame({"layout": ["8×B300 TP8", "8×B200 TP8"], "usable_GiB": [268.6, 179.1],
                         "aic_weights_GiB": [181.0, 181.0], "k3lab_weights_GiB": [192.4, 192.4],
                         "aic_max_kv_tokens": [2.0e6, 0.0], "k3lab_max_kv_tokens": [0.99e6, 0.0]})


def test_aiconfigurator_memory_tells_the_usable_line_from_a_bar_and_why_no_mi355x():
    fig = fig_memory.aiconfigurator_figure(_aic_memory())
    weights = fig.axes[0]
    usable = [ln for ln in weights.get_lines() if ln.get_marker() == "D"]
    assert sorted(round(float(ln.get_ydata()[0]), 1) for ln in usable) == [179.1, 268.6]
    assert all(ln.get_linestyle() == "--" for ln in usable)  # dashed with diamonds: not a bar's top edge
    assert [t.get_text() for t in weights.get_xticklabels()] == ["8×B300 TP8\nusable 269 GiB", "8×B200 TP8\nusable 179 GiB"]
    assert "No MI355X here: aiconfigurator 0.12 models NVIDIA GPUs only" in texts(fig)


# ---------------------------------------------------------------- verdicts.png

def test_verdict_figure_whole_number_ticks_and_a_colour_per_verdict():
    df = pd.DataFrame([{"finding": f, "verdict": v} for v in claims.VERDICTS for f in ("memory", "throughput")]
                      + [{"finding": "memory", "verdict": "reproduced"}] * 3)
    fig = report.verdict_figure(df)
    ax = fig.axes[0]
    fig.canvas.draw()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    colours = {legend_labels(ax.get_legend())[i]: to_hex(h.get_facecolor())
               for i, h in enumerate(ax.get_legend().legend_handles)}
    assert list(colours) == list(claims.VERDICTS)
    assert len(set(colours.values())) == len(claims.VERDICTS)  # no two verdicts alike


def test_text_on_a_verdict_colour_reads():
    assert report_html.text_color("#ffffff") == "#000000" and report_html.text_color("#000000") == "#ffffff"
    assert report_html.text_color(report_html.VERDICT_COLORS["reproduced"]) == "#ffffff"    # dark green: white text
    assert report_html.text_color(report_html.VERDICT_COLORS["not reproducible here"]) == "#000000"


def test_article_perf_per_dollar_prices_what_the_decision_prices():
    from study_helpers import stand_in_band

    from k3lab import prices
    from k3lab.findings import field as field_claims

    # model v4: one Blackwell family validates the B300's and the B200's decode speed; the 16xB200 spans nodes,
    # outside the validated domain (priced, and marked so)
    t = field_claims.article_perf_per_dollar({"mi355x": 3.0})
    assert set(t["layout"]) == {MI, B300, B200}
    assert not t[t["layout"] == B200]["in_domain"].any() and t[t["layout"] == B300]["in_domain"].all()
    with stand_in_band("nvidia-blackwell"):   # a stand-in band changes the band, not which layouts are priced
        assert set(field_claims.article_perf_per_dollar({"mi355x": 3.0})["layout"]) == {MI, B300, B200}
    assert (t["electricity_usd_per_gpu_hour"] == 0).all()  # the decision box's setting: no electricity
    mi = t[(t["layout"] == MI) & (t["tier"] == prices.OVERRIDE_TIER)].iloc[0]
    # $/M = $/GPU-hour × 1e6 / (tok/s per GPU × 3600), at the user's $3.00
    assert mi["usd_per_million_tokens"] == pytest.approx(3.0 * 1e6 / (mi["tok_s"] / 8 * 3600))
    assert mi["usd_per_million_tokens_low"] < mi["usd_per_million_tokens"] < mi["usd_per_million_tokens_high"]
    fig = fig4.perf_per_dollar_figure(prices.perf_per_dollar_by_tier({"mi355x": 3.0}), t)
    assert "your prices" in [x.get_text().split("\n")[0] for x in fig.axes[0].get_yticklabels()]


# ---------------------------------------------------------------- issue 38: the figures a renter reads

def test_power_spans_the_assumed_electricity_from_zero_and_says_a_breakeven_beyond_it():
    from k3lab import prices

    lo, hi = prices.electricity_assumptions()["usd_per_kwh_range"]
    fig = fig4.power_figure()
    for ax in fig.axes:
        assert ax.get_xlim() == pytest.approx((lo, hi))         # the same range in every panel, nothing beyond it
        assert ax.get_ylim()[0] == 0                            # a gap reads at its true size
    be = prices.power_breakevens("mi355x_tp8", "b300_tp8_dcp", [1.3]).set_index("tier")["breakeven_usd_per_kwh"]
    t = texts(fig)
    # the article's prices: the lead vanishes only beyond the range, said in words, not drawn as a crossing
    assert be["article"] > hi and f"only at ${be['article']:.2f}/kWh, beyond the range shown" in t
    assert "MI355X +45.7%\nat $0.00/kWh" in t                    # each end's lead, written


def test_validation_reads_one_direction_for_times_and_rates():
    # a time twice the published one and a rate half of it are the same error: the model half as fast
    assert fig_field.speed_ratio("tpot_ms", 40.0, 20.0) == fig_field.speed_ratio("output_tok_s", 50.0, 100.0) == 0.5
    assert fig_field.speed_ratio("ttft_ms", 500.0, 1000.0) == 2.0   # optimistic: predicts it faster


def test_validation_figure_draws_repository_and_time_splits_and_greys_extrapolations():
    """Filled: left out with its repository; hollow: the time split; the engine and harness splits are
    the coverage figure's; a prediction extrapolated across nodes (never in a band) is grey, whatever
    its GPU, and the legend says so."""
    from matplotlib.colors import to_rgba

    from k3lab.findings import field_figures

    rows, obs, bands = field_figures.validation_inputs()
    fig = fig_field.validation_figure(rows, obs, bands)
    drawn = sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections)
    want = sum(r.split in fig_field.DRAWN_SPLITS for f in rows for r in rows[f])
    assert drawn == want
    grey = to_rgba(fig_field.EXTRAPOLATED_COLOR, 0.85)
    greyed = sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections
                 if tuple(c.get_edgecolor()[0]) == pytest.approx(grey))
    assert greyed == sum(r.split in fig_field.DRAWN_SPLITS and r.extrapolated for f in rows for r in rows[f]) > 0
    assert "extrapolated across nodes" in texts(fig)


def test_fit_figure_draws_each_gpu_as_shipped_and_as_it_must_be_set():
    from k3lab import specs
    from k3lab.findings import f1_memory as f1

    cfg = specs.load_model("kimi-k3")
    got = f1.figure_plans(cfg, ["8xmi355x tp8", "8xb300 tp8", "16xb200 tp8 pp2"])
    # the MI355X needs SGLANG_AITER_K3_OPT=1 and the B300 a state-pool flag for a 1,048,576-token request
    # (compare's fits_with); the TP8xPP2 B200 holds it with sglang's defaults, so it is drawn once
    assert [(p.label, s) for p, s in got] == [
        ("8×MI355X TP8", "sglang defaults"), ("8×MI355X TP8", "aiter-k3-opt"),
        ("8×B300 TP8", "sglang defaults"), ("8×B300 TP8", "--mamba-full-memory-ratio 0.795"),
        ("16×B200 TP8×PP2", "sglang defaults")]
    assert [p.fits for p, _ in got] == [False, True, False, True, True]
    fig = fig_memory.fit_figure([p for p, _ in got], "kimi-k3", [s for _, s in got])
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks[3] == "8×B300 TP8\n--mamba-full-memory-ratio\n0.795"


def test_cost_against_interactivity_draws_a_band_that_moves_both_axes():
    curves = [{"layout": "8xmi355x tp8 [aiter-k3-opt]", "label": MI, "gpu": "mi355x", "band": math.log(1.5),
               "points": [(1, 20.0, 50.0, 6.0, 400.0), (64, 50.0, 20.0, 150.0, 16.0)]},
              {"layout": "16xb200 tp16", "label": B200, "gpu": "b200", "band": None,
               "points": [(1, 25.0, 40.0, 3.0, 700.0), (32, 40.0, 25.0, 60.0, 50.0)]}]
    fig = fig_field.interactivity_figure(curves, "your prices", [25, 40], "1,024 in / 400 out")
    ax = fig.axes[0]
    (band,) = [p for p in ax.patches]                      # only the validated curve has one
    xy = [tuple(round(v, 6) for v in pt) for pt in band.get_xy().tolist()]
    # the fast edge: tok/s per user x 1.5 at $/M / 1.5; the slow edge the other way
    assert (round(50.0 * 1.5, 6), round(400.0 / 1.5, 6)) in xy and (round(50.0 / 1.5, 6), round(400.0 * 1.5, 6)) in xy
    assert "(not validated)" in legend_labels(ax.get_legend())[1]
    assert {round(1e3 / 25), round(1e3 / 40)} == {round(ln.get_xdata()[0]) for ln in ax.get_lines()
                                                   if ln.get_linestyle() == ":"}
    assert "your prices" in ax.get_title() and ax.get_yscale() == "log"


def test_speedup_legend_names_every_mark():
    rows = [{"tau": t, "single": t * 0.8, "peak": t * 0.3} for t in (1.0, 2.0, 3.0)]
    fig = fig_field.speedup_figure(rows, math.log(1.2), [1.5, 2.5], (1.5, 2.5), 2.2, 1.18)
    labels = legend_labels(fig.axes[0].get_legend())
    # a multiplicative band: x1.20 is -17% (1 - 1/1.2) and +20%, never "±20%"
    assert any(lab.startswith("the model's band (x1.20 (-17%/+20%)") for lab in labels)
    assert "1x: DSpark gains nothing" in labels
    assert any("tick per public run" in lab for lab in labels)

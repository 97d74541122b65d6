"""``k3lab.report_tables`` and ``k3lab.report_cells``: the one table formatter of the report (and of
notebooks' tables), and the cells it writes.

Every expected cell below is written by hand from the input value, never produced by the code
under test.
"""

import math
import re

import numpy as np
import pandas as pd
import pytest

from k3lab import report_cells as rc
from k3lab import report_tables as rt


def cells(html: str) -> list[list[str]]:
    """The body rows of the first table in ``html``, as cell texts (tags inside kept)."""
    body = html[html.index("<tbody>"):html.index("</tbody>")]
    return [re.findall(r"<td(?:\s[^>]*)?>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def heads(html: str) -> list[str]:
    head = html[html.index("<thead>"):html.index("</thead>")]
    return re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", head)


def test_missing_values_are_a_dash_never_nan():
    df = pd.DataFrame({"name": ["a", None, "c"], "x": [1.5, np.nan, 2.5], "n": [pd.NA, 3, 4]})
    html = rt.table_html(df)
    assert "NaN" not in html and "nan" not in html and "None" not in html and "&lt;NA&gt;" not in html
    assert cells(html) == [["a", "1.50", "—"], ["—", "—", "3"], ["c", "2.50", "4"]]


def test_thousands_separators_and_no_scientific_notation():
    df = pd.DataFrame({"max_kv_tokens": [1374958, 990592], "flops": [2.726e15, 1.957e4],
                       "small_s": [3.1e-05, 2.0e-05]})
    html = rt.table_html(df)
    assert not re.search(r"\de[+-]?\d", html)
    assert cells(html) == [["1,374,958", "2,726,000,000,000,000", "0.000031"],
                           ["990,592", "19,570", "0.000020"]]


def test_prices_have_cents_and_counts_are_whole():
    df = pd.DataFrame({"usd_per_gpu_hour": [2.5, 6.0, 14.0], "usd_per_hour": [20.0, 48.0, 224.0],
                       "num_gpus": [8.0, 8.0, 16.0]})
    html = rt.table_html(df)
    assert heads(html) == ["$/GPU-hour", "$/hour", "num GPUs"]
    assert cells(html) == [["2.50", "20.00", "8"], ["6.00", "48.00", "8"], ["14.00", "224.00", "16"]]


def test_scientific_notation_written_by_a_notebook_as_text_is_made_positional():
    df = pd.DataFrame({"quantity": ["attention FLOPs", "share"], "value": ["2.726e+15", "37.8%"]})
    assert cells(rt.table_html(df)) == [["attention FLOPs", "2,726,000,000,000,000"], ["share", "37.8%"]]


def test_markdown_in_cells_is_rendered_and_html_escaped():
    df = pd.DataFrame({"note": ["prices **of the same kind**", "a `code` and *this*", "<script>x</script>",
                                "top_k=20 and 8 * 192"]})
    got = [r[0] for r in cells(rt.table_html(df))]
    assert got == ["prices <b>of the same kind</b>", "a <code>code</code> and <i>this</i>",
                   "&lt;script&gt;x&lt;/script&gt;", "top_k=20 and 8 * 192"]


def test_no_index_column():
    df = pd.DataFrame({"gpu": ["mi355x", "b300"], "weights_gib_per_gpu": [191.04, 192.38]})
    html = rt.table_html(df)
    assert heads(html) == ["GPU", "weights (GiB per GPU)"] and "<th>0</th>" not in html
    assert cells(html) == [["mi355x", "191.0"], ["b300", "192.4"]]
    filtered = pd.DataFrame({"tier": ["a", "b", "c", "d"], "pue": [1.3, 1.5, 1.3, 1.5]})
    filtered = filtered[filtered.pue == 1.3]          # index 0, 2: row numbers, not data
    assert cells(rt.table_html(filtered)) == [["a", "1.30"], ["c", "1.30"]]
    named = pd.DataFrame({"claim_id": ["M1", "M2"], "verdict": ["reproduced", "discrepancy"]}).set_index("claim_id")
    html = rt.table_html(named)
    assert heads(html) == ["claim ID", "verdict"]
    assert cells(html) == [["M1", "reproduced"], ["M2", "discrepancy"]]


def test_booleans_and_units_in_headers():
    df = pd.DataFrame({"fits": [True, False], "decode_bound_tok_s": [8432.82, 15118.0], "error_pct": [-4.9, 22.7],
                       "ttft_s": [51.0, 23.0]})
    html = rt.table_html(df)
    assert heads(html) == ["fits", "decode bound (tok/s)", "error (%)", "TTFT (s)"]
    assert cells(html) == [["yes", "8,433", "-4.90", "51"], ["no", "15,118", "22.70", "23"]]


def test_empty_table_is_one_line():
    html = rt.table_html(pd.DataFrame(columns=["claim_id", "verdict"]), empty="nothing judged here")
    assert "<table" not in html and html == '<p class="empty">nothing judged here</p>'


def test_wide_table_shows_the_columns_a_reader_needs_and_folds_the_rest():
    tiers = [f"t{k}" for k in range(10)]
    df = pd.DataFrame({"label": ["8×B300 TP8", "8×MI355X TP8"], "kv_dtype": ["bf16", "bf16"],
                       "reason": [None, None], "max_kv_tokens": [990592, 1374958],
                       **{f"usd_per_hour[{t}]": [40.0 + k, 20.0 + k] for k, t in enumerate(tiers)},
                       "usd_per_hour[t10]": [np.nan, 19.5]})
    html = rt.table_html(df, full_csv="01_x/fit.csv")
    shown = html[:html.index("<details")]
    assert heads(shown) == ["label", "max KV tokens", "$/hour: min – max of 11"]
    assert cells(shown) == [["8×B300 TP8", "990,592", "40.00 – 49.00"],
                            ["8×MI355X TP8", "1,374,958", "19.50 – 29.00"]]
    assert "empty in every row: reason" in shown and "the same in every row: KV dtype bf16" in shown
    full = html[html.index("<details"):]
    assert "15 columns × 2 rows, scrolls sideways" in full and 'href="01_x/fit.csv"' in full and len(heads(full)) == 15
    # the folded full table scrolls inside its section at readable column widths (never squeezed to slivers)
    assert '<div class="table-wrap wide">' in full and '<div class="table-wrap">' in shown


def test_wide_tables_scroll_inside_their_section_with_a_cue():
    from k3lab import report_html

    css = report_html.CSS
    assert ".table-wrap{overflow-x:auto;max-width:100%" in css
    assert ".table-wrap.wide>table{width:max-content}" in css
    assert "right/16px 100% no-repeat scroll" in css  # the shadow at the right edge says there is more


def test_pandas_html_is_read_back_and_restyled():
    df = pd.DataFrame({"renorm": ["k3lab", "rank mask"], "chi2": [2.755, 13337.4], "p_value": [0.431, np.nan]})
    html = rt.restyle_html(f"<p>before</p>{df.to_html()}<p>after</p>")
    assert 'class="dataframe"' not in html and "<p>before</p>" in html and "<p>after</p>" in html
    assert heads(html) == ["renorm", "chi2", "p value"]
    assert cells(html) == [["k3lab", "2.75", "0.431"], ["rank mask", "13,337", "—"]]


def test_pandas_multiindex_html_keeps_the_index_as_columns():
    t = pd.crosstab([pd.Series(["memory", "memory", "prefill"], name="finding"),
                     pd.Series(["derived", "arithmetic", "derived"], name="method")],
                    pd.Series(["reproduced", "consistent", "reproduced"], name="verdict"))
    frame, truncated = rt.frame_from_pandas_html(t.to_html())
    assert not truncated
    assert list(frame.columns) == ["finding", "method", "consistent", "reproduced"]
    assert frame.values.tolist() == [["memory", "arithmetic", 1, 0], ["memory", "derived", 0, 1],
                                     ["prefill", "derived", 0, 1]]


def test_replace_hook_and_truncation_note():
    df = pd.DataFrame({"a": range(3)})
    assert rt.restyle_html(df.to_html(), replace=lambda f: "<p>mine</p>") == "<p>mine</p>"
    with pd.option_context("display.max_rows", 4, "display.min_rows", 4):
        html = rt.restyle_html(pd.DataFrame({"a": range(100)})._repr_html_())
    assert "pandas shortened this table" in html


@pytest.mark.parametrize("value, decimals, text", [
    (19570.0, 0, "19,570"), (1234567, 0, "1,234,567"), (2.5, 2, "2.50"), (-0.0001, 2, "0.00"),
    (math.inf, 0, "∞"), (float("nan"), 2, "—"), (None, 0, "—"), (0.00402, None, "0.00402"),
    (2722.74, None, "2,723"), (191.04, None, "191.0"), (-0.04, None, "-0.04"), (0.006, None, "0.006")])
def test_format_number(value, decimals, text):
    assert rc.format_number(value, decimals) == text


def test_header_labels():
    assert rc.header_label("weights_gib_per_gpu") == "weights (GiB per GPU)"
    assert rc.header_label("tok_s_per_dollar_hour") == "tok/s per $/hour"
    assert rc.header_label("usd_per_million_tokens_at_bound[article]") == "$/M tokens at bound · article"
    assert rc.header_label("request mix") == "request mix"


def test_show_is_displayable_in_a_notebook():
    t = rt.show(pd.DataFrame({"x": [1]}))
    assert t._repr_html_() == rt.table_html(pd.DataFrame({"x": [1]}))

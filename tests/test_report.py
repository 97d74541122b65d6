"""``k3lab.report``: a self-contained report that leads with the decision, and the README table.

Built from a small synthetic results folder: a ledger written with the claims' columns and
one tiny executed notebook made with nbformat (a DataFrame as HTML, a PNG, a stream, and an
output that tries to load a script from the network).
"""

import base64
import html
import json
import re

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from k3lab import claims, io, manifest, report, report_html, report_notebooks, transaction
from k3lab.paths import results_root

PNG_1PX = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()
CODE = "frame = compute_the_answer()  # unique-code-marker"

LEDGER = [  # claim_id, method, verdict
    ("X1", "derived", "reproduced"), ("X2", "measured", "reproduced"), ("X3", "derived", "reproduced"),
    ("X4", "arithmetic", "consistent"), ("X5", "emulated", "consistent (emulated)"),
    ("X6", "modelled", "not reproducible here"),
    ("X7", "derived", "discrepancy"),
]
#: the kind of correction and the author's reply of the negative rows (issue 36)
NEGATIVE = {"X7": ("literal", "reply: it meant one node; stands: the words say all hardware")}


def _ledger(root):
    rows = [{"claim_id": cid, "finding": "memory", "quote": f"the article says {cid}", "claimed": "1", "unit": "u",
             "method": m, "reproduced": "" if m == "modelled" else "1", "bound": "bound 7" if m == "modelled" else "",
             "verdict": v, "rule": "matches", "tolerance": "", "evidence": f"evidence {cid}", "notes": "",
             "correction_kind": NEGATIVE.get(cid, ("", ""))[0], "rebuttal": NEGATIVE.get(cid, ("", ""))[1]}
            for cid, m, v in LEDGER]
    pd.DataFrame(rows, columns=claims.LEDGER_COLUMNS).to_csv(root / "claims.csv", index=False)


def _notebook(root, nb_id="01_memory_fit", parameters=None):
    d = root / nb_id
    d.mkdir(parents=True)
    html_df = pd.DataFrame({"gpu": ["mi355x"], "fits": [True]}).to_html()
    nb = new_notebook(cells=[
        new_markdown_cell("# Memory fit\n\nThe article's claim, quoted. ![logo](https://cdn.example.org/logo.png)"),
        new_code_cell('mode = "offline"', metadata={"tags": ["parameters"]}),
        new_code_cell(CODE, execution_count=1, outputs=[
            new_output("stream", name="stdout", text="printed line\n"),
            new_output("execute_result", execution_count=1, data={"text/html": html_df, "text/plain": "frame"}),
            new_output("display_data", data={"image/png": PNG_1PX, "text/plain": "<Figure>"}),
            new_output("display_data", data={"text/html": '<script src="https://cdn.example.org/x.js"></script>'
                                                          '<link rel="stylesheet" href="https://cdn.example.org/x.css">'
                                                          '<img src="https://cdn.example.org/x.png">'
                                                          '<iframe src="//cdn.example.org/x"></iframe>'}),
        ]),
    ])
    nb.metadata["papermill"] = {"parameters": parameters or {"mode": "offline"}}
    nbformat.write(nb, d / f"{nb_id}.ipynb")


@pytest.fixture
def study(tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    _ledger(root)
    _notebook(root)
    return report.build(root).read_text(encoding="utf-8")


def _loads_nothing_from_the_network(page: str):
    assert "<script" not in page.lower()
    assert "<link" not in page.lower() and "@import" not in page and "url(" not in page
    srcs = re.findall(r"""\bsrc\s*=\s*["']?([^"'\s>]+)""", page, flags=re.I)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs), srcs
    assert not re.search(r"""\b(src|href)\s*=\s*["']?(https?:)?//""", page, flags=re.I)


def test_report_is_self_contained(study):
    _loads_nothing_from_the_network(study)
    assert "cdn.example.org" not in study


def test_decision_comes_first_and_marks_article_vs_study(study):
    i, j = study.index('id="decision"'), study.index('id="ledger"')
    assert i < j < study.index('id="01_memory_fit"')
    decision = study[i:j]
    assert "fit" in decision and 'class="fit"' in decision        # (a) GPU × layout matrix
    assert "MI355X" in decision and "16 GPUs TP8×PP2" in decision
    assert "ARTICLE" in decision and "STUDY" in decision          # (b) each number's origin
    assert "reproduced: 2 derived, 1 measured" in decision         # (c) counts by method (hand count)
    assert "3 were shown independently" in decision               # the plain-language answer


def test_the_page_opens_with_the_articles_bottom_line(study):
    """The bottom line (k3lab.bottom_line, from the ledger) comes before the decision box; this
    ledger has no T20/T21, and the box says so rather than guess."""
    i = study.index('id="bottom-line"')
    assert i < study.index('id="decision"') < study.index('id="verdicts"')
    box = study[i:study.index('id="decision"')]
    assert "is not in this ledger" in box and "1 · memory fit" in box
    # X7 is a literal correction: the meaning holds, the words do not (issue 36)
    assert "holds (shown here): X1, X2, X3" in box and "holds as meant, wrong as worded: X7 (claimed 1, found 1)" in box


def test_code_cells_are_collapsed_and_tables_are_html(study):
    blocks = re.findall(r"<details>.*?</details>", study, flags=re.S)
    assert any("unique-code-marker" in b for b in blocks)
    assert "unique-code-marker" not in re.sub(r"<details>.*?</details>", "", study, flags=re.S)
    assert "printed line" in study and f"data:image/png;base64,{PNG_1PX}" in study
    # the DataFrame the cell displayed, as the page's table: no pandas markup, no index column
    assert 'class="dataframe"' not in study
    nb = study[study.index('id="01_memory_fit"'):]
    assert '<th>GPU</th><th>fits</th></tr></thead><tbody><tr><td>mi355x</td><td>yes</td></tr>' in nb


def test_ledger_has_method_column_and_marks_emulated(study):
    ledger = study[study.index('id="ledger"'):study.index('id="01_memory_fit"')]
    heads = re.findall(r"<th>(.*?)</th>", ledger)
    assert heads == ["id", "claim", "claimed", "method", "reproduced", "bound", "verdict", "evidence",
                     "author's best reply"]
    emulated = re.findall(r'<tr class="emulated">.*?</tr>', ledger, flags=re.S)
    assert len(emulated) == 1 and '<b id="claim-X5">X5</b>' in emulated[0] and "EMULATED" in emulated[0]
    assert "bound 7" in ledger
    # issue 36: a negative row names its kind of correction and carries the author's reply
    x7 = re.search(r'<b id="claim-X7">X7</b>.*?</tr>', ledger, flags=re.S).group(0)
    assert "<small>literal</small>" in x7 and "reply: it meant one node; stands: the words say all hardware" in x7


def test_the_summary_counts_corrections_by_kind(study):
    top = study[study.index('id="verdicts"'):study.index('id="fit"')]
    assert "Negative verdicts by kind of correction</b> — 1 literal" in top
    assert "1 are wrong or needed correcting (1 literal)" in html.unescape(top)


def test_what_if_build_has_no_ledger(tmp_path):
    root = tmp_path / "results" / "runs" / "dsv3"
    root.mkdir(parents=True)
    _notebook(root, parameters={"model": "deepseek-v3", "kv_dtype": "fp8", "context_tokens": 131072,
                                "gpus": ["mi300x", "h200"]})
    page = report.build(root, what_if=True).read_text(encoding="utf-8")
    _loads_nothing_from_the_network(page)
    assert 'id="ledger"' not in page and "claims ledger here" in page
    assert "what-if" in page.lower() and "deepseek-v3" in page and "131,072" in page
    assert page.index('id="decision"') < page.index('id="01_memory_fit"')
    assert not (root / "claims.csv").exists()
    matrix = page[page.index('class="fit"'):page.index("</table>", page.index('class="fit"'))]
    assert "<th>MI300X</th>" in matrix and "<th>H200</th>" in matrix and "B300" not in matrix


def _k3lab_folder(root, what_if=None, profile="offline"):
    """A complete run as k3lab leaves one: marked, a ledger (study) or a what-if notebook, and a
    manifest listing them (``what_if`` left out: a manifest written before it said)."""
    transaction.claim(root)
    if what_if:
        _notebook(root, parameters={"model": "deepseek-v3", "gpus": ["mi300x", "h200"]})
    else:
        _ledger(root)
    files = {str(p.relative_to(root)): manifest.sha256(p) for p in root.rglob("*")
             if p.is_file() and p.name != transaction.MARKER}
    man = {"run_id": "20990101T000000Z-1", "profile": profile, "files": files}
    if what_if is not None:
        man["what_if"] = what_if
    io.write_json(root / "manifest.json", man)
    return root


def test_main_renders_a_results_folder(tmp_path, capsys):
    root = _k3lab_folder(tmp_path / "elsewhere", what_if=False)
    assert report.main(["--results", str(root)]) == 0
    page = (root / "report.html").read_text(encoding="utf-8")
    assert 'id="ledger"' in page
    # written in a staging folder of k3lab's and renamed: nothing else is left beside it
    assert sorted(p.name for p in root.iterdir()) == [transaction.MARKER, "claims.csv", "manifest.json", "report.html"]
    assert manifest.verify(root) == []


@pytest.mark.parametrize("kind", ["a user's folder", "a folder named runs/x", "a notebook's folder of a run"])
def test_main_refuses_a_folder_k3lab_never_made_in_one_line(tmp_path, capsys, kind):
    """Issue 35: ``report --results DIR`` replaced DIR/report.html in any folder (exit 0)."""
    if kind == "a notebook's folder of a run":
        root = _k3lab_folder(tmp_path / "run", what_if=False) / "01_memory_fit"
        root.mkdir()
    else:
        root = tmp_path / ("mine" if kind == "a user's folder" else "runs/x")
        root.mkdir(parents=True)
        _ledger(root)
    (root / "report.html").write_text("my own page\n")
    before = sorted(p.name for p in root.iterdir())
    assert report.main(["--results", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("k3lab report: error: ") and err.count("\n") == 1 and "not a k3lab results folder" in err
    assert (root / "report.html").read_text() == "my own page\n" and sorted(p.name for p in root.iterdir()) == before


def test_main_refuses_a_marked_folder_without_a_complete_run(tmp_path, capsys):
    root = tmp_path / "fresh"
    transaction.claim(root)
    assert report.main(["--results", str(root)]) == 2
    assert "no complete run there" in capsys.readouterr().err
    assert sorted(p.name for p in root.iterdir()) == [transaction.MARKER]


@pytest.mark.parametrize("where,what_if", [("runs/study-run", False), ("not-runs/whatif-run", True),
                                           ("runs/legacy-study", None)])
def test_what_if_comes_from_the_manifest_not_a_parent_named_runs(tmp_path, where, what_if):
    """Issue 35: the what-if mode was inferred from a parent folder named ``runs``. Now the
    manifest says; one written before it did is a study run unless it lies at
    ``<results>/runs/<its profile>/`` (here it does not: ``tmp/runs`` is not the results folder)."""
    root = _k3lab_folder(tmp_path / where, what_if=what_if)
    assert report.main(["--results", str(root)]) == 0
    page = (root / "report.html").read_text(encoding="utf-8")
    assert ('id="ledger"' not in page) is bool(what_if)
    assert ("claims ledger here" in page) is bool(what_if)


def test_a_legacy_what_if_run_under_the_results_runs_folder_renders_as_one(tmp_path):
    root = _k3lab_folder(results_root() / "runs" / "buyer", what_if=True, profile="buyer")
    man = json.loads((root / "manifest.json").read_text())
    del man["what_if"]
    io.write_json(root / "manifest.json", man)
    assert report.main(["--results", str(root)]) == 0
    assert "claims ledger here" in (root / "report.html").read_text(encoding="utf-8")


def test_bad_ledger_is_one_clear_error(tmp_path):
    (tmp_path / "claims.csv").write_text("claim_id,verdict\nX1,reproduced\n")
    with pytest.raises(ValueError, match="columns"):
        report.build(tmp_path)
    _ledger(tmp_path)
    (tmp_path / "claims.csv").write_text((tmp_path / "claims.csv").read_text().replace("consistent", "great"))
    with pytest.raises(ValueError, match="unknown verdict or method 'great'"):
        report.read_ledger(tmp_path / "claims.csv")


def test_readme_table_has_method_column_summary_and_emulated(tmp_path):
    _ledger(tmp_path)
    df = report.read_ledger(tmp_path / "claims.csv")
    text = report.readme_table(df)
    lines = text.splitlines()
    assert lines[0].startswith("Verdicts by method — reproduced: 2 derived, 1 measured; consistent: ")
    assert "| method |" in lines[2]
    x5 = next(line for line in lines if line.startswith("| X5 |"))
    assert "| emulated |" in x5 and "(emulated" in x5
    assert next(line for line in lines if line.startswith("| X7 |")).endswith("| discrepancy (literal) |")
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{report.README_START}\nold\n{report.README_END}\ntail\n")
    assert not report.readme_is_current(readme, tmp_path / "claims.csv")
    readme.write_text(report.render_readme(readme.read_text(), text))
    assert report.readme_is_current(readme, tmp_path / "claims.csv")


# --------------------------------------------------------------------------- a report a person reads

def _claims_notebook(root, nb_id, frame, what_if=False):
    """A notebook whose last cell displays ``frame`` (as a Recorder's frame or notebook 05's
    ledger view would), and whose markdown has $ signs around **bold** text."""
    d = root / nb_id
    d.mkdir(parents=True)
    nb = new_notebook(cells=[
        new_markdown_cell(f"# {nb_id} title\n\nThe article's $/GPU-hour against prices **of the same kind**; "
                          "the article's throughputs give this perf/$:"),
        new_code_cell("rec.frame()", execution_count=1, outputs=[
            new_output("execute_result", execution_count=1,
                       data={"text/html": frame.to_html(), "text/plain": "frame"})]),
    ])
    nb.metadata["papermill"] = {"parameters": {"model": "deepseek-v3"} if what_if else {"mode": "offline"}}
    nbformat.write(nb, d / f"{nb_id}.ipynb")


def test_the_ledger_appears_once(tmp_path):
    """Notebook 05 displays the whole ledger and notebook 01 its own claims: the page shows each
    row once (in the ledger) and, in the notebooks, a line linking to the rows."""
    root = tmp_path / "results"
    root.mkdir()
    _ledger(root)
    ledger = pd.read_csv(root / "claims.csv", dtype=str, keep_default_na=False)
    _claims_notebook(root, "01_memory_fit", ledger[["claim_id", "method", "verdict", "evidence"]].head(3))
    _claims_notebook(root, "05_claims_ledger", ledger[claims.LEDGER_VIEW].set_index("claim_id"))
    page = report.build(root).read_text(encoding="utf-8")
    for cid, _, _ in LEDGER:
        assert page.count(f"evidence {cid}<") == 1, cid         # the evidence cell: in the ledger only
        assert page.count(f'id="claim-{cid}"') == 1
    nb05 = page[page.index('id="05_claims_ledger"'):]
    assert "<table" not in nb05 and "All 7 claims" in nb05 and 'href="#claim-X7"' in nb05
    nb01 = page[page.index('id="01_memory_fit"'):page.index('id="05_claims_ledger"')]
    assert "<table" not in nb01 and "3 claims:" in nb01
    assert [a for a in re.findall(r'href="#claim-(\w+)"', nb01)] == ["X1", "X2", "X3"]


def test_empty_verdict_tables_are_one_line(tmp_path):
    root = tmp_path / "results" / "runs" / "dsv3"
    root.mkdir(parents=True)
    _claims_notebook(root, "01_memory_fit", pd.DataFrame(columns=claims.SUMMARY_COLUMNS), what_if=True)
    page = report.build(root, what_if=True).read_text(encoding="utf-8")
    nb = page[page.index('id="01_memory_fit"'):]
    assert "<table" not in nb and "claim ID" not in nb
    assert nb.count("No verdicts: a what-if run judges none of the article's claims.") == 1


def test_markdown_with_dollar_signs_is_rendered(tmp_path):
    """nbconvert reads `$/GPU-hour … perf/$` as math and leaves the **bold** between literal."""
    root = tmp_path / "results"
    root.mkdir()
    _ledger(root)
    _claims_notebook(root, "01_memory_fit", pd.DataFrame({"x": [1]}))
    page = report.build(root).read_text(encoding="utf-8")
    assert "<strong>of the same kind</strong>" in page and "**" not in page
    assert "<h2>01_memory_fit title</h2>" in page          # the notebook's heading is its section's title


def test_the_top_is_short_and_the_detail_collapsible(study):
    """Above the first collapsible section: the title, the decision box and the verdict summary
    only; the fit matrix, perf/$, ledger and notebooks are closed <details> sections."""
    top = study[:study.index('<details class="section"')]
    assert 'id="decision"' in top and 'id="verdicts"' in top and "3 were shown independently" in top
    assert "<table" not in top
    sections = re.findall(r'<details class="section" id="([^"]+)">', study)
    assert sections == ["fit", "perf", "ledger", "01_memory_fit"]


def test_the_decision_box_is_one_swappable_function(tmp_path):
    """The box is what one function ``decision(Decision) -> HTML`` returns: by default
    :func:`report_html.decision_html` (k3lab.decision's headline, then the details collapsed), and
    whatever ``build(decision=...)`` is given instead, in the study's report and a what-if's."""
    from k3lab import compare_answers, compare_view, decision

    root = tmp_path / "results"
    root.mkdir()
    _ledger(root)
    _notebook(root)
    seen = []

    def default(d):
        seen.append(d)
        return report_html.decision_html(d)

    page = report.build(root, decision=default).read_text(encoding="utf-8")
    (d,) = seen
    assert isinstance(d, decision.Decision)
    # the study's question: Kimi K3 at its config's max_position_embeddings, 1,048,576 tokens
    assert (d.model, d.context_tokens) == ("kimi-k3", 1048576)
    assert d.answers == compare_answers.answers(d.comparison)      # the cheapest per source, as compare says
    box = report_html.decision_html(d)
    assert box in page and page.count('id="decision"') == 1
    top, details = box.split("<details>", 1)
    assert "The decision" in top
    for line in decision.headline(d):                       # the headline on top, every sentence of it
        assert f"<li>{html.escape(line)}</li>" in top
    for a in d.answers:                                     # compare's answer lines in the details
        assert html.escape(compare_view.answer_line(a, d.context_tokens)) in details

    def mine(d):
        seen.append(d)
        return '<div class="decision" id="decision">rent the cheapest node that holds it</div>'

    seen.clear()
    page = report.build(root, decision=mine).read_text(encoding="utf-8")
    assert [(x.model, x.context_tokens) for x in seen] == [("kimi-k3", 1048576)]
    assert "rent the cheapest node that holds it" in page and "The decision" not in page
    assert page.index('id="decision"') < page.index('id="verdicts"') < page.index('id="ledger"')

    seen.clear()
    run = tmp_path / "results" / "runs" / "dsv3"
    run.mkdir(parents=True)
    _notebook(run, parameters={"model": "deepseek-v3", "context_tokens": 131072, "gpus": ["mi300x", "h200"]})
    page = report.build(run, what_if=True, decision=mine).read_text(encoding="utf-8")
    assert [(x.model, x.context_tokens) for x in seen] == [("deepseek-v3", 131072)]
    assert "rent the cheapest node that holds it" in page and "The decision" not in page


def test_a_displayed_frame_comes_from_the_csv_its_cell_wrote(tmp_path):
    """Whole values (pandas' display cut nothing) and a link to the file."""
    root = tmp_path / "results"
    d = root / "01_memory_fit"
    d.mkdir(parents=True)
    _ledger(root)
    (d / "plans.csv").write_text("layout,max_kv_tokens,note\n8×MI355X TP8,1374958,a long note that pandas cut\n")
    nb = new_notebook(cells=[new_code_cell(
        'plans = f1.fit_table(cfg)\nio.write_csv(plans, out / "plans.csv")\nplans', execution_count=1, outputs=[
            new_output("execute_result", execution_count=1,
                       data={"text/html": pd.DataFrame({"layout": ["8×MI355X TP8"], "note": ["a long..."]}).to_html(),
                             "text/plain": "x"})])])
    nbformat.write(nb, d / "01_memory_fit.ipynb")
    page = report.build(root).read_text(encoding="utf-8")
    nb_part = page[page.index('id="01_memory_fit"'):]
    assert "1,374,958" in nb_part and "a long note that pandas cut" in nb_part
    assert 'href="01_memory_fit/plans.csv"' in nb_part and "a long..." not in nb_part


def test_displayed_csv():
    assert report_notebooks.displayed_csv('x = f()\nio.write_csv(x, out / "x.csv")\nx') == "x.csv"
    assert report_notebooks.displayed_csv('io.write_csv(x, P.results_dir(NB) / "y.csv")\nx') == "y.csv"
    assert report_notebooks.displayed_csv('io.write_csv(x, out / "x.csv")\nx.head()') is None
    assert report_notebooks.displayed_csv('io.write_csv(y, out / "y.csv")\nx') is None
    assert report_notebooks.displayed_csv("def (:") is None


def test_screenshots_without_chromium_is_one_line(tmp_path, monkeypatch, capsys):
    from k3lab import report_screenshots

    monkeypatch.setenv("CHROMIUM", str(tmp_path / "no-such-chromium"))
    monkeypatch.setenv("PATH", str(tmp_path))
    page = tmp_path / "report.html"
    page.write_text("<html></html>")
    assert report_screenshots.main([str(page), "--out", str(tmp_path / "shots")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chromium not found" in err and "`make browser` installs it" in err
    assert not (tmp_path / "shots").exists()


def test_screenshots_capture_each_slice_and_refuse_a_blank_one(tmp_path, monkeypatch):
    """Issue 38: one full-page shot of a long page came out blank past Chromium's largest surface while the
    command reported success. Each slice is now its own capture of the page shifted up by its offset, and a
    slice of one flat colour is an error naming it. Chromium is faked here: it "captures" a flat image."""
    from PIL import Image

    from k3lab import report_screenshots as rs

    page = "<html><head><title>t</title></head><body><p>x</p></body></html>"
    seg = rs._segment(page, 2200)
    assert "top:-2200px" in seg and seg.index("top:-2200px") < seg.index("</head>")  # the shift, in the head
    flat, busy = tmp_path / "flat.png", tmp_path / "busy.png"
    Image.new("RGB", (50, 50), "white").save(flat)
    im = Image.new("RGB", (50, 50), "white")
    im.putpixel((3, 3), (0, 0, 0))
    im.save(busy)
    assert rs.is_blank(flat) and not rs.is_blank(busy)
    calls = []

    def fake(exe, args, profile, timeout_s=180):
        shot = next((a.split("=", 1)[1] for a in args if a.startswith("--screenshot=")), None)
        calls.append(args)
        if shot:
            Image.new("RGB", (rs.WIDTH_PX, 100), "white").save(shot)
        return '<body data-page-height="2500">'

    monkeypatch.setattr(rs, "_chromium", fake)
    src = tmp_path / "p.html"
    src.write_text(page)
    with pytest.raises(rs.BlankSlice, match=r"slice s-00.png \(0-1,100 px of 2,500\) came out blank"):
        rs.shoot("chromium", src, tmp_path / "s", 1100)


def test_open_screenshots_open_every_drop_down(study):
    """``make screenshots``' "open" shots: every <details> of the page open — the sections, the
    decision box's drop-downs, the folded full tables and the code cells — and the wide tables'
    scrollbars shown (a table cut at the right edge must read as one that scrolls)."""
    from k3lab import report_screenshots

    decision = study[study.index('id="decision"'):study.index('id="verdicts"')]
    assert re.search(r"<details><summary>", decision)               # the box has closed drop-downs
    opened = report_screenshots._opened(study)
    tags = re.findall(r"<details\b[^>]*>", opened, flags=re.I)
    assert len(tags) == len(re.findall(r"<details\b", study, flags=re.I)) >= 4
    assert all(re.match(r"<details open\b", t) for t in tags)
    assert report_screenshots._opened(opened) == opened              # an open one is left as it is
    assert "--hide-scrollbars" not in report_screenshots.FLAGS


def test_report_mistakes_are_one_line_through_the_module_too(tmp_path, capsys):
    """``python -m k3lab.report`` (the Makefile's way in) answers as ``python -m k3lab report``."""
    _ledger(tmp_path)
    for argv, says in ((["--readme", str(tmp_path / "missing.md"), "--claims", str(tmp_path / "claims.csv")],
                       "missing.md"), (["--results", str(tmp_path / "nowhere")], "no such folder"),
                       (["--bogus"], "unknown flag --bogus")):
        try:
            rc = report.main(argv)
        except SystemExit as e:
            rc = e.code
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and err.startswith("k3lab report: error: ") and says in err, err

"""Notebook parameters are checked however a notebook is run (issue 12: "an unknown papermill
parameter passed to a notebook directly only warns and the run exits 0"; "smoke: 'yes
please' runs as true").

Unit tests of :mod:`k3lab.nbparams`, then end to end: a tiny fixture notebook
(``tests/fixtures/notebooks/01_a.ipynb``, kernel ``k3lab``) run with ``papermill`` directly,
no k3lab pipeline in between.
"""

from pathlib import Path

import pytest

from k3lab import nbparams
from k3lab.nbparams import ParameterError
from k3lab.paths import results_root

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "notebooks"
DEFAULTS = {"mode": "offline", "smoke": False, "rows": 3, "scale": 1.0, "label": "a",
            "gpus": ["mi355x"], "prices": {}, "limit": None}
PARAMS_CELL = ('# k3lab parameters\nmode = "offline"   # offline | live\nsmoke = False\nrows = 3\n'
               'scale = 1.0\nlabel = "a"\ngpus = ["mi355x"]\nprices = {}\nlimit = None\n')


# --------------------------------------------------------------------------- declared


def test_declared_reads_defaults_and_papermill_injection():
    history = ["", PARAMS_CELL, '# Parameters\nrows = 5\nlabel = "z"\n', "x = 1"]
    defaults, injected = nbparams.declared(history)
    assert defaults == DEFAULTS
    assert injected == {"rows": 5, "label": "z"}


def test_declared_without_parameters_cell():
    with pytest.raises(ParameterError, match="no parameters cell"):
        nbparams.declared(["mode = 'offline'", "x = 1"])


def test_declared_refuses_a_computed_default():
    with pytest.raises(ParameterError, match="'rows'.*literal"):
        nbparams.declared(["# k3lab parameters\nmode = 'offline'\nrows = len('abc')\n"])


# --------------------------------------------------------------------------- validate


def test_unknown_name_is_refused_and_the_declared_names_listed():
    with pytest.raises(ParameterError) as ei:
        nbparams.validate(DEFAULTS, {"rows": 4, "colour": "red"})
    msg = str(ei.value)
    assert "colour" in msg and "rows" in msg and "smoke" in msg and "\n" not in msg


@pytest.mark.parametrize("name, value", [
    ("smoke", "yes please"),   # the case: a string for a bool
    ("smoke", 1),              # an int is not a bool
    ("smoke", "false"),
    ("rows", 2.5),             # a float for an int
    ("rows", True),            # a bool is not a count
    ("rows", "3"),
    ("scale", "1.5"),
    ("scale", True),
    ("label", 7),
    ("gpus", "mi355x"),        # a bare string where a list is declared
    ("gpus", {"mi355x": 1}),
    ("prices", ["mi355x", 2.0]),
])
def test_wrong_type_is_refused(name, value):
    with pytest.raises(ParameterError, match=f"'{name}'"):
        nbparams.validate(DEFAULTS, {name: value})


@pytest.mark.parametrize("name, value", [
    ("scale", 2),                   # an int is fine for a float
    ("scale", 0.5),
    ("rows", 7),
    ("smoke", True),
    ("gpus", ["b300", "b200"]),     # lists of any length but 0 (the default has one entry)
    ("gpus", ("b300",)),            # a tuple for a list
    ("prices", {"mi355x": 2.0}),
    ("limit", 5),                   # a None default takes anything
    ("limit", "x"),
])
def test_right_type_is_accepted(name, value):
    out = nbparams.validate(DEFAULTS, {name: value})
    assert out[name] == value
    assert {k: v for k, v in out.items() if k != name} == {k: v for k, v in DEFAULTS.items() if k != name}


def test_none_is_not_a_bool():
    """`smoke:` left empty in a profile arrives as None; it must not run as a falsy smoke."""
    with pytest.raises(ParameterError, match="'smoke'"):
        nbparams.validate(DEFAULTS, {"smoke": None})


# --------------------------------------------------------------------------- check


def test_check_in_a_kernel_namespace():
    ns = {"In": ["", PARAMS_CELL, "# Parameters\nrows = 5\nscale = 2\n", "P = check(globals())"],
          **DEFAULTS, "rows": 5, "scale": 2}
    P = nbparams.check(ns)
    assert P["rows"] == 5 and P["scale"] == 2 and P["smoke"] is False
    assert P.changed == {"rows": 5, "scale": 2}
    assert P.what_if


def test_check_refuses_unknown_injected_name():
    ns = {"In": ["", PARAMS_CELL, "# Parameters\ncolour = 'red'\n"], **DEFAULTS, "colour": "red"}
    with pytest.raises(ParameterError, match="colour"):
        nbparams.check(ns)


def test_check_refuses_a_bad_mode():
    ns = {"In": ["", PARAMS_CELL, "# Parameters\nmode = 'turbo'\n"], **DEFAULTS, "mode": "turbo"}
    with pytest.raises(ParameterError, match="mode"):
        nbparams.check(ns)


def test_check_outside_a_kernel():
    with pytest.raises(ParameterError, match="inside a notebook kernel"):
        nbparams.check({"mode": "offline"})


def test_mode_and_smoke_do_not_make_a_what_if(monkeypatch):
    monkeypatch.delenv(nbparams.RUN_ENV, raising=False)
    ns = {"In": ["", PARAMS_CELL, "# Parameters\nmode = 'live'\nsmoke = True\n"], **DEFAULTS,
          "mode": "live", "smoke": True}
    P = nbparams.check(ns)
    assert P.changed == {} and not P.what_if
    assert P.results_dir("01_a") == results_root() / "01_a"


def test_a_what_if_by_hand_never_writes_over_the_study(monkeypatch):
    monkeypatch.delenv(nbparams.RUN_ENV, raising=False)
    ns = {"In": ["", PARAMS_CELL, "# Parameters\nrows = 9\n"], **DEFAULTS, "rows": 9}
    d = nbparams.check(ns).results_dir("01_a")
    assert d.parent.parent == results_root() / "runs"
    assert d.parent.name.startswith("adhoc-") and d.name == "01_a"
    # stable: the same question gets the same folder
    assert nbparams.check(dict(ns)).results_dir("01_a") == d


def test_an_exported_k3lab_run_is_no_run_for_a_notebook_by_hand(monkeypatch):
    """Issue 35: with K3LAB_RUN exported in a shell, a what-if notebook run by hand wrote over
    the study's results/01_memory_fit/. Only the pipeline's kernel (K3LAB_RESULTS at its marked
    staging folder) is a run."""
    monkeypatch.setenv(nbparams.RUN_ENV, "study")
    ns = {"In": ["", PARAMS_CELL, "# Parameters\nrows = 9\n"], **DEFAULTS, "rows": 9}
    d = nbparams.check(ns).results_dir("01_a")
    assert d.parent.parent == results_root() / "runs" and d.parent.name.startswith("adhoc-"), d
    assert nbparams.pipeline_run() is None
    # the pipeline's own kernel: its staging folder, marked
    from k3lab import transaction

    staging = transaction.new_staging(Path(results_root()).parent, "20990101T000000Z-1")
    monkeypatch.setenv("K3LAB_RESULTS", str(staging))
    assert nbparams.pipeline_run() == "study"
    assert nbparams.check(dict(ns)).results_dir("01_a") == staging / "01_a"


def test_a_parameter_list_of_200000_entries_is_refused_before_it_is_walked():
    with pytest.raises(ParameterError) as ei:
        nbparams.validate(DEFAULTS, {"gpus": ["mi355x"] * 200_000})
    assert "parameter 'gpus': its number of entries must be 0 to 1,000" in str(ei.value)
    assert "200,000" in str(ei.value) and "\n" not in str(ei.value)


# --------------------------------------------------------------------------- papermill directly


def _papermill(tmp_path, parameters):
    import papermill as pm

    out = tmp_path / "executed.ipynb"
    return pm.execute_notebook(str(FIXTURES / "01_a.ipynb"), str(out), parameters=parameters,
                               kernel_name="k3lab", cwd=str(FIXTURES), progress_bar=False,
                               log_output=False)


def test_papermill_with_declared_parameters_runs(tmp_path):
    nb = _papermill(tmp_path, {"rows": 2, "scale": 2, "gpus": ["b300", "b200"]})
    assert nb.metadata["papermill"]["parameters"] == {"rows": 2, "scale": 2, "gpus": ["b300", "b200"]}
    # a changed parameter is a what-if: the table goes under results/runs/, never results/01_a
    tables = list(results_root().rglob("table_a.csv"))
    assert len(tables) == 1 and tables[0].relative_to(results_root()).parts[0] == "runs"
    assert tables[0].read_text().splitlines() == ["i,x,label", "0,0,a", "1,2,a"]


def test_papermill_with_an_undeclared_parameter_fails(tmp_path):
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as ei:
        _papermill(tmp_path, {"rows": 2, "colour": "red"})
    assert ei.value.ename == "ParameterError"
    assert "unknown parameter(s) ['colour']" in ei.value.evalue
    assert not list(results_root().rglob("*.csv"))  # refused before anything was written


@pytest.mark.parametrize("params, name", [({"smoke": "yes please"}, "smoke"),
                                          ({"rows": "3"}, "rows"),
                                          ({"gpus": "mi355x"}, "gpus")])
def test_papermill_with_a_wrong_type_fails(tmp_path, params, name):
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as ei:
        _papermill(tmp_path, params)
    assert ei.value.ename == "ParameterError"
    assert f"parameter '{name}'" in ei.value.evalue
    assert not list(results_root().rglob("*.csv"))  # refused before anything was written


def test_check_without_history_reads_the_notebook_file(tmp_path, monkeypatch):
    """nbval runs cells with store_history=False, so ``In`` holds no parameters cell: the
    defaults then come from the notebook file, and a value that differs is a what-if."""
    import json as _json

    nb = {"cells": [{"cell_type": "markdown", "source": "# t"},
                    {"cell_type": "code", "source": PARAMS_CELL.splitlines(keepends=True)}]}
    (tmp_path / "01_a.ipynb").write_text(_json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(nbparams.paths, "NOTEBOOKS_DIR", tmp_path)
    P = nbparams.check({"In": [""], **DEFAULTS}, "01_a")
    assert not P.what_if
    assert nbparams.check({"In": [""], **dict(DEFAULTS, rows=7)}, "01_a").changed == {"rows": 7}
    with pytest.raises(ParameterError, match="no parameters cell found"):
        nbparams.check({"In": [""], **DEFAULTS})
    with pytest.raises(ParameterError, match="cannot read the parameters cell of 09_x.ipynb"):
        nbparams.check({"In": [""], **DEFAULTS}, "09_x")


# --------------------------------------------------------------------------- issue 35, hostile pass: M5


NB04 = "04_throughput_perf_per_dollar"


def _plan_nb04(tmp_path, params: str):
    """The pre-check of ``reproduce`` (:func:`k3lab.pipeline.plan`) on the study's own notebooks."""
    from k3lab import pipeline

    (tmp_path / "p.yaml").write_text(f"what_if: true\nnotebooks:\n  {NB04}: {params}\n")
    return pipeline.plan("p", params_dir=tmp_path)


def test_a_request_past_the_models_context_is_refused_before_the_first_notebook(tmp_path):
    """M5: input_len 1,048,576 + output_len 1 passed the pre-check and failed inside notebook 04.
    Kimi K3's context: its config.json's max_position_embeddings (read here, not from k3lab)."""
    import json

    from k3lab import pipeline

    limit = json.loads((Path(__file__).resolve().parents[1] / "data" / "model" / "kimi_k3_config.json")
                       .read_text())["text_config"]["max_position_embeddings"]

    with pytest.raises(pipeline.PipelineError) as ei:
        _plan_nb04(tmp_path, "{input_len: 1048576, output_len: 1}")
    msg = str(ei.value)
    assert "\n" not in msg and NB04 in msg and "'input_len' + 'output_len'" in msg and "1,048,577" in msg, msg
    assert f"maximum of {limit:,}" in msg, msg
    jobs = _plan_nb04(tmp_path, f"{{input_len: {limit - 1024}, output_len: 1024}}")  # exactly the context
    assert jobs[0].parameters["input_len"] == limit - 1024


def test_gpu_names_in_upper_case_are_what_the_notebook_uses_too(tmp_path):
    """M5: usd_per_gpu_hour {MI355X: 3} passed the pre-check (which lower-cased it) and failed in
    notebook 04 ("price override for unknown GPU 'MI355X'"). The notebook now runs on the names
    the check accepted: check() lower-cases them in its namespace, as the CLI reads MI355X=3."""
    _plan_nb04(tmp_path, "{usd_per_gpu_hour: {MI355X: 3}, gpus: [MI355X, b300]}")
    cell = ('# k3lab parameters\nmode = "offline"\nsmoke = False\ngpus = ["mi355x"]\nusd_per_gpu_hour = {}\n'
            'model = "kimi-k3"\n')
    given = {"usd_per_gpu_hour": {"MI355X": 3}, "gpus": ["MI355X", "b300"], "model": "Kimi-K3"}
    ns = {"In": ["", cell, f"# Parameters\n{''.join(f'{k} = {v!r}' + chr(10) for k, v in given.items())}"],
          "mode": "offline", "smoke": False, **given}
    P = nbparams.check(ns)
    assert ns["usd_per_gpu_hour"] == {"mi355x": 3} == P["usd_per_gpu_hour"]
    assert ns["gpus"] == ["mi355x", "b300"] and ns["model"] == "kimi-k3"
    from k3lab import prices

    assert prices.prices(ns["usd_per_gpu_hour"]).query("tier == 'override'").usd_per_gpu_hour.tolist() == [3.0]

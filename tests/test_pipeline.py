"""The reproduction spine: profiles, parameter validation, atomic outputs."""

import os
from pathlib import Path

import nbformat
import pytest

from k3lab import io, pipeline
from k3lab.paths import results_root


def _notebook(path: Path, params_src: str, body: str = "x = 1") -> Path:
    nb = nbformat.v4.new_notebook()
    cells = []
    if params_src is not None:
        cells.append(nbformat.v4.new_code_cell(params_src, metadata={"tags": ["parameters"]}))
    cells.append(nbformat.v4.new_code_cell(body))
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.fixture
def tiny_study(tmp_path):
    nbs, params = tmp_path / "notebooks", tmp_path / "params"
    nbs.mkdir()
    params.mkdir()
    _notebook(nbs / "01_alpha.ipynb", 'mode = "offline"\nsmoke = False\nn = 3')
    _notebook(nbs / "02_beta.ipynb", 'mode = "offline"\nsmoke = False')
    (params / "offline.yaml").write_text("defaults: {mode: offline, smoke: false}\nnotebooks: {}\n")
    return nbs, params


def test_unknown_profile_lists_known(tiny_study):
    nbs, params = tiny_study
    with pytest.raises(pipeline.PipelineError, match=r"unknown profile 'nope'; known profiles: offline"):
        pipeline.plan("nope", params_dir=params, notebooks_dir=nbs)


def test_undeclared_parameter_stops_before_running(tiny_study):
    nbs, params = tiny_study
    (params / "bad.yaml").write_text("defaults: {mode: offline, smoke: false}\n"
                                     "notebooks: {02_beta: {n: 5}}\n")
    with pytest.raises(pipeline.PipelineError, match=r"02_beta.ipynb parameter\(s\) \['n'\] that the notebook does not declare"):
        pipeline.plan("bad", params_dir=params, notebooks_dir=nbs)
    # Nothing ran, nothing was written.
    assert not results_root().exists() or not any(results_root().iterdir())


def test_declared_parameter_is_passed(tiny_study):
    nbs, params = tiny_study
    (params / "good.yaml").write_text("defaults: {mode: offline, smoke: true}\n"
                                      "notebooks: {01_alpha: {n: 7}}\n")
    jobs = {j.notebook_id: j.parameters for j in pipeline.plan("good", params_dir=params, notebooks_dir=nbs)}
    assert jobs == {"01_alpha": {"mode": "offline", "smoke": True, "n": 7},
                    "02_beta": {"mode": "offline", "smoke": True}}


def test_profile_naming_missing_notebook(tiny_study):
    nbs, params = tiny_study
    (params / "ghost.yaml").write_text("notebooks: {09_ghost: {}}\n")
    with pytest.raises(pipeline.PipelineError, match="notebooks that do not exist: \\['09_ghost'\\]"):
        pipeline.plan("ghost", params_dir=params, notebooks_dir=nbs)


def test_bad_mode_and_shape(tiny_study):
    nbs, params = tiny_study
    (params / "m.yaml").write_text("defaults: {mode: turbo}\n")
    with pytest.raises(pipeline.PipelineError, match="mode must be one of"):
        pipeline.load_profile("m", params)
    (params / "s.yaml").write_text("default: {mode: offline}\n")
    with pytest.raises(pipeline.PipelineError, match="top-level keys"):
        pipeline.load_profile("s", params)


def test_notebook_without_parameters_cell(tiny_study):
    nbs, params = tiny_study
    _notebook(nbs / "03_gamma.ipynb", None)
    with pytest.raises(pipeline.PipelineError, match="03_gamma.ipynb: no cell tagged 'parameters'"):
        pipeline.plan("offline", params_dir=params, notebooks_dir=nbs)


def test_notebook_must_declare_mode_and_smoke(tiny_study):
    nbs, params = tiny_study
    _notebook(nbs / "03_gamma.ipynb", "n = 1")
    with pytest.raises(pipeline.PipelineError, match="must declare 'mode'"):
        pipeline.plan("offline", params_dir=params, notebooks_dir=nbs)


def test_every_study_notebook_plans_under_every_profile():
    for profile in pipeline.known_profiles():
        jobs = pipeline.plan(profile)
        assert [j.notebook_id for j in jobs] == [p.stem for p in pipeline.notebooks()]
        assert all(j.parameters["mode"] in pipeline.MODES for j in jobs)
    ids = [p.stem for p in pipeline.notebooks()]
    assert ids[-1] == "05_claims_ledger"


def test_failed_notebook_leaves_no_output(tiny_study):
    nbs, params = tiny_study
    _notebook(nbs / "01_alpha.ipynb", 'mode = "offline"\nsmoke = False', body="raise RuntimeError('boom')")
    job = pipeline.plan("offline", only=["01_alpha"], params_dir=params, notebooks_dir=nbs)[0]
    out_dir = results_root() / "01_alpha"
    out_dir.mkdir(parents=True)
    (out_dir / "01_alpha.ipynb").write_text("previous good run")
    with pytest.raises(Exception, match="boom"):
        pipeline.run_job(job, kernel_name="python3")
    assert sorted(p.name for p in out_dir.iterdir()) == ["01_alpha.ipynb"]
    assert (out_dir / "01_alpha.ipynb").read_text() == "previous good run"


def test_successful_notebook_lands_under_results(tiny_study):
    nbs, params = tiny_study
    job = pipeline.plan("offline", only=["01_alpha"], params_dir=params, notebooks_dir=nbs)[0]
    out = pipeline.run_job(job, kernel_name="python3")
    assert out == results_root() / "01_alpha" / "01_alpha.ipynb"
    nb = nbformat.read(out, as_version=4)
    assert nb.metadata["papermill"]["parameters"] == {"mode": "offline", "smoke": False}
    assert [p.name for p in out.parent.iterdir()] == ["01_alpha.ipynb"]


def test_cli_reports_bad_profile(capsys):
    assert pipeline.main(["--profile", "nope"]) == 2
    assert "unknown profile 'nope'" in capsys.readouterr().err


def test_atomic_write_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with io.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["t.csv"]


def test_csv_is_deterministic(tmp_path):
    import pandas as pd

    df = pd.DataFrame({"a": [1, 2], "x": [1 / 3, 2.0e-9]})
    io.write_csv(df, tmp_path / "a.csv")
    io.write_csv(df.copy(), tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes() == b"a,x\n1,0.333333\n2,2e-09\n"

"""environment.yml mirrors pyproject.toml's pins (pyproject is the source of truth)."""

import tomllib

import yaml

from k3lab.paths import REPO_ROOT


def test_environment_yml_mirrors_pyproject():
    with open(REPO_ROOT / "pyproject.toml", "rb") as f:
        proj = tomllib.load(f)["project"]
    pins = set(proj["dependencies"]) | set(proj["optional-dependencies"]["dev"])
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    mirrored = {p for p in pip_section if not p.startswith("-e")}
    # k3lab-patches is not on PyPI: the local distribution, installed editable before the study
    assert "k3lab-patches==0.1.0" in pins
    assert mirrored == pins - {"k3lab-patches==0.1.0"}
    editable = [p for p in pip_section if p.startswith("-e")]
    assert editable == ["-e ./patches", "-e ."]
    py = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert py == "python=3.11" and proj["requires-python"].startswith(">=3.11")

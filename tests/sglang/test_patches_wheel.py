"""k3lab-patches as an operator installs it (docs/operators.md), against the real sglang 0.5.16.

The wheel is built from ``patches/`` into a temporary folder, its metadata checked (name,
Python 3.10-3.12, torch the only requirement and without an upper bound, the sglang plugin
entry point, pure Python), installed with ``pip install --no-deps --target`` (never into
.venv-sglang itself), and used from child processes of .venv-sglang whose ``PYTHONPATH`` is
that folder alone: ``python -m k3lab_patches verify`` as the recipe says (sglang's verifier
raises the TypeError as installed and matches the reference once patched), the NameError
state of the kimi-k3 branch images, and the plugin entry point as sglang's ``load_plugins``
runs it — all without the k3lab study imported and with sglang's own torch.
"""

import configparser
import email
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import setuptools
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

PATCHES_DIR = Path(__file__).resolve().parents[2] / "patches"
VOCAB = 2048
DFLASH = "sglang.srt.speculative.dflash_utils"


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(wheel, install folder): built from a copy of patches/ (no build/ left in the tree)."""
    # offline: this environment's setuptools builds it (what `pip wheel` fetches otherwise); in
    # .venv-sglang torch 2.14.1 requires setuptools>=77.0.3, so one that needs no `wheel` package
    assert Version(setuptools.__version__) >= Version("70.1"), \
        f"setuptools {setuptools.__version__} here; patches/pyproject.toml builds with >= 70.1"
    tmp = tmp_path_factory.mktemp("k3lab_patches")
    src = tmp / "src"
    shutil.copytree(PATCHES_DIR, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                 str(src), "-w", str(tmp / "dist")])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = (tmp / "dist").glob("*.whl")
    site = tmp / "site"
    proc = _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(site),
                 str(wheel)])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return wheel, site


def _child(site: Path, args: list[str], cwd: Path):
    """.venv-sglang's Python with only the installed wheel added to its path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "K3LAB_PATCHES", "K3LAB_PATCHES_FORCE")}
    env["PYTHONPATH"] = str(site)
    return _run([sys.executable, *args], env=env, cwd=str(cwd))


def test_wheel_metadata(built):
    wheel, _ = built
    assert wheel.name.startswith("k3lab_patches-") and wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(z.read(f"{info}/METADATA"))
        wheel_file = email.message_from_bytes(z.read(f"{info}/WHEEL"))
        eps = configparser.ConfigParser()
        eps.read_string(z.read(f"{info}/entry_points.txt").decode())
    assert meta["Name"] == "k3lab-patches"
    python = SpecifierSet(meta["Requires-Python"])
    assert all(v in python for v in ("3.10.0", "3.11.7", "3.12.3", "3.13.0"))
    assert "3.9.18" not in python
    reqs = [Requirement(r) for r in meta.get_all("Requires-Dist")]
    assert [r.name for r in reqs] == ["torch"]
    assert reqs[0].specifier and all(s.operator == ">=" for s in reqs[0].specifier), reqs[0]
    # any torch an sglang image carries, ROCm pre-release builds included
    assert all(reqs[0].specifier.contains(v, prereleases=True) for v in ("2.9.0a0+git1c57644", "2.11.0", "2.14.1"))
    assert dict(eps["sglang.srt.plugins"]) == {"k3lab_patches": "k3lab_patches.plugin:sglang_plugin"}
    assert wheel_file["Root-Is-Purelib"] == "true"
    assert {n.split("/")[0] for n in names} == {"k3lab_patches", info}
    assert "k3lab_patches/release_verdicts.json" in names
    assert not [n for n in names if n.endswith((".so", ".pyd", ".pyc"))]


def test_no_deps_install_holds_the_package_only(built):
    _, site = built
    top = sorted(p.name for p in site.iterdir())
    assert top[0] == "k3lab_patches" and top[1].startswith("k3lab_patches-") and len(top) == 2, top


def test_the_recipes_verify_command(built, tmp_path):
    _, site = built
    r = _child(site, ["-m", "k3lab_patches", "verify", "--vocab", str(VOCAB)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    lines = r.stdout.splitlines()  # sglang prints its own notes (no aiter on CPU) before ours
    lines = lines[next(i for i, ln in enumerate(lines) if ln.startswith("sglang 0.5.16, batch: ")):]
    assert lines[0].startswith("sglang 0.5.16, batch: top_k=20 mixed with unrestricted")
    assert lines[1] == "as installed: TypeError: 'NoneType' object is not callable"
    assert f"{DFLASH}.top_k_renorm_prob" in lines[2] and f"{DFLASH}.top_p_renorm_prob" in lines[2]
    assert lines[3].startswith("patched verifier vs reference: ok")
    # issue 35: on a build or a box without CUDA, from the installed wheel too: one line, no traceback
    import torch

    if not torch.cuda.is_available():
        r = _child(site, ["-m", "k3lab_patches", "verify", "--device", "cuda", "--vocab", str(VOCAB)], tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-2000:]
        assert r.stderr.startswith("k3lab_patches verify: error: --device cuda: this torch"), r.stderr
    r = _child(site, ["-m", "k3lab_patches", "status"], tmp_path)
    out = r.stdout.splitlines()
    out = out[out.index("sglang 0.5.16"):]
    # the release that fixed each upstream, as the release matrix measured it (0.5.17 binds the Triton renorms,
    # 0.5.19 accepts 12 heads); 0.5.16 cannot run Kimi K3, and picks triton for its 12 heads per rank on ROCm
    assert r.returncode == 0 and out[1:3] == [
        "  topk_renorm: needed; fixed upstream in sglang 0.5.17: upgrading removes the need "
        "(sglang PR #32641: Triton top-k and top-p renorm bound on HIP)",
        "  aiter_head_pad: needed; fixed upstream in sglang 0.5.19: upgrading removes the need "
        "(sglang 0.5.19 accepts 12 heads per rank (PR #34647; PR #36356's pad_heads not yet called); "
        "from 0.5.22 its fp8 prefill pads 12 -> 16 and slices back, as this patch does (PR #34438, likely))"]
    assert "no Kimi K3 model module (first in sglang 0.5.17)" in out[3] and "--attention-backend aiter" in out[4]
    assert out[5].startswith("note: ") and "--force" in out[5] and "from sglang 0.5.19 none is needed" in out[5]


_CHILD = """
import importlib, json, os, sys
from importlib import metadata

import k3lab_patches
from k3lab_patches import verify as V

d = importlib.import_module(V.DFLASH)
d.__dict__.pop("top_k_renorm_prob", None)  # the kimi-k3 branch images: PR #32621 state
r = V.verify(vocab={vocab})
k3lab_patches.revert()
restored = "top_k_renorm_prob" not in d.__dict__ and d.top_p_renorm_prob is None
eps = [e for e in metadata.distribution("k3lab-patches").entry_points if e.group == "sglang.srt.plugins"]
os.environ["K3LAB_PATCHES"] = "1"
plugged = [e.load()() for e in eps]  # what sglang's load_plugins does with each entry point
print(json.dumps({{"verify": r, "restored": restored, "entry_points": [f"{{e.name}}={{e.value}}" for e in eps],
                  "plugged": plugged, "package": k3lab_patches.__file__, "torch": sys.modules["torch"].__file__,
                  "study_modules": sorted(m for m in sys.modules if m == "k3lab" or m.startswith("k3lab."))}}))
"""


def test_name_error_state_fixed_and_the_plugin_applies_without_the_study(built, tmp_path):
    _, site = built
    r = _child(site, ["-c", _CHILD.format(vocab=VOCAB)], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    v = out["verify"]
    assert v["as_installed"].startswith("NameError: name 'top_k_renorm_prob' is not defined")
    assert v["matches_reference"] is True and v["max_abs_diff"] <= 1e-6
    assert f"{DFLASH}.top_k_renorm_prob" in v["patched"]
    assert out["restored"] is True  # revert put the missing name back to missing
    assert out["entry_points"] == ["k3lab_patches=k3lab_patches.plugin:sglang_plugin"]
    assert f"{DFLASH}.top_k_renorm_prob" in out["plugged"][0]
    assert any(p.endswith("AiterAttnBackend.__init__") for p in out["plugged"][0])
    assert Path(out["package"]).is_relative_to(site)
    assert not Path(out["torch"]).is_relative_to(site)  # sglang's own torch, untouched
    assert out["study_modules"] == []

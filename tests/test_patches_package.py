"""The k3lab-patches distribution (patches/) apart from the study: one implementation
re-exported by the study, nothing but torch needed, Python 3.10 syntax, the release verdicts
it ships equal to the study's matrix, git builds judged by the release below them.
Its wheel, installed beside a real sglang without the study: tests/sglang/test_patches_wheel.py."""

import ast
import re
import inspect
import subprocess
import sys
import tomllib
from pathlib import Path

import k3lab_patches
import pytest
from k3lab_patches import head_padding, releases, sampling
from k3lab_patches import topk_renorm as T

import k3lab.attention
import k3lab.patches
import k3lab.sampling
import k3lab.versions
from k3lab import cli, release_status

PATCHES_DIR = Path(__file__).resolve().parents[1] / "patches"
PKG = PATCHES_DIR / "k3lab_patches"


# --------------------------------------------------------------------------- one implementation

@pytest.mark.parametrize("study, package, names", [
    (k3lab.sampling, sampling, ["top_k_renorm_prob", "top_p_renorm_prob", "top_p_pivot", "check_probs",
                                "per_row_k", "per_row_p", "_top_k_plan", "TOP_K_ALL", "NORM_EPS"]),
    (k3lab.attention, head_padding, ["is_supported_heads", "padded_heads", "kernel_heads", "with_head_padding",
                                     "pad_heads", "check_qkv", "check_cu", "SGLANG_MAX_HEADS"]),
    (k3lab.patches, k3lab_patches, ["apply", "revert", "status", "check_version", "sglang_version",
                                    "UnsupportedSglangVersion", "UpstreamFixed"]),
    (k3lab.versions, releases, ["version_key"]),
])
def test_the_study_reexports_the_packages_objects(study, package, names):
    for n in names:
        assert getattr(study, n) is getattr(package, n), f"{study.__name__}.{n} is a second copy"


def test_the_study_defines_only_what_the_package_does_not():
    def own(mod):
        return {n for n, v in vars(mod).items() if inspect.isfunction(v) and v.__module__ == mod.__name__}

    assert own(k3lab.sampling) == {"top_k_sort_fix", "top_k_rank_mask", "kept_counts", "tie_straddles"}
    assert own(k3lab.attention) == {"head_table"}
    assert own(k3lab.patches) == set()
    # the patch binds the package's renorm, which the study calls k3lab.sampling's
    assert T.REPLACEMENTS["top_k_renorm_prob"](*_probs_k()).equal(k3lab.sampling.top_k_renorm_prob(*_probs_k()))
    assert cli.COMMANDS["serve"][1] == "k3lab_patches.serve:main"


def _probs_k():
    import torch

    return torch.tensor([[0.1, 0.3, 0.2, 0.2, 0.2], [0.5, 0.25, 0.125, 0.0625, 0.0625]]), torch.tensor([2, 1])


# --------------------------------------------------------------------------- torch only, Python 3.10

def _imports(path: Path) -> list[tuple[str, bool]]:
    """(absolute module name, at module level?) for every import of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append((node.module, id(node) in top))
    return out


def test_the_package_needs_the_standard_library_and_torch_only():
    files = sorted(PKG.glob("*.py"))
    assert len(files) >= 8
    for path in files:
        for name, top_level in _imports(path):
            root = name.split(".")[0]
            assert root in sys.stdlib_module_names or root in {"torch", "sglang", "k3lab_patches"}, \
                f"{path.name} imports {name}: k3lab-patches depends on torch only"
            # sglang is what is patched: imported when a patch runs, never to import the package
            assert not (root == "sglang" and top_level), f"{path.name} imports sglang at module level"
            assert root != "tomllib", f"{path.name}: tomllib is Python 3.11+"
    assert [p.name for p in PKG.iterdir() if p.suffix not in (".py",) and p.name != "__pycache__"] \
        == ["release_verdicts.json"]


@pytest.mark.parametrize("path", sorted(PKG.glob("*.py")), ids=lambda p: p.name)
def test_every_module_parses_as_python_3_10(path):
    ast.parse(path.read_text(encoding="utf-8"), filename=str(path), feature_version=(3, 10))


def test_pyproject_torch_lower_bound_only_python_from_3_10_and_the_plugin():
    proj = tomllib.loads((PATCHES_DIR / "pyproject.toml").read_text())
    assert proj["project"]["name"] == "k3lab-patches"
    assert proj["project"]["dependencies"] == ["torch>=2.1"]
    assert proj["project"]["requires-python"] == ">=3.10"
    assert proj["project"]["entry-points"]["sglang.srt.plugins"] == {
        "k3lab_patches": "k3lab_patches.plugin:sglang_plugin"}
    study = tomllib.loads((PATCHES_DIR.parent / "pyproject.toml").read_text())["project"]
    assert f"k3lab-patches=={proj['project']['version']}" in study["dependencies"]
    assert "entry-points" not in study  # one plugin, registered by the package


# --------------------------------------------------------------------------- release verdicts

def test_shipped_verdicts_are_the_committed_matrix():
    shipped = releases.load()
    assert shipped == release_status.patch_verdicts(), \
        "patches/k3lab_patches/release_verdicts.json is stale: run release_status.write_patch_verdicts()"
    assert releases.measured() == [r["sglang"] for r in release_status.load_matrix()["rows"]]
    # what the matrix shows (README: topk_renorm only 0.5.16; aiter_head_pad 0.5.16-0.5.18)
    assert [r["sglang"] for r in shipped["rows"] if r["topk_renorm"]] == ["0.5.16"]
    assert [r["sglang"] for r in shipped["rows"] if r["aiter_head_pad"]] == ["0.5.16", "0.5.17", "0.5.18"]


def test_version_order_is_pep_440():
    order = ["0.5.15", "0.5.15.post1", "0.5.16", "0.5.16+rocm700", "0.5.17.dev3", "0.5.17.dev12+g1a2b3c4",
             "0.5.17rc1", "0.5.17", "0.5.17.post1", "0.5.18"]
    assert sorted(reversed(order), key=releases.version_key) == order
    assert releases.version_key("0.5") == releases.version_key("0.5.0")
    with pytest.raises(ValueError, match="not a PEP 440 version"):
        releases.version_key("main")


@pytest.mark.parametrize("version, built_on", [
    ("0.5.17.dev12+g1a2b3c4", "0.5.16"),  # setuptools-scm on a branch forked after v0.5.16
    ("0.5.16+rocm700", "0.5.16"),         # a release with a local label
    ("0.5.19.dev2", "0.5.18"),
    ("0.5.16.dev1", None),                # before anything measured
    ("0.5.19.post1", "0.5.19"),           # attack 5: a post-release is its release rebuilt, not "unknown"
    ("0.5.16.post1", "0.5.16"),
    ("0.5.15.post1", None),
])
def test_a_build_is_judged_by_the_release_below_it(version, built_on):
    assert releases.is_build(version)
    row = releases.lookup(version)
    if built_on is None:
        assert row["status"] == "unknown"
    else:
        assert row["built_on"] == built_on and row["sglang"] == built_on


def test_a_build_needs_force_and_says_what_judged_it():
    from k3lab_patches import aiter_head_pad as AH

    build = "0.5.17.dev12+g1a2b3c4"
    assert k3lab_patches.status(T.PATCH, build) == "needed, untested"
    with pytest.raises(k3lab_patches.UnsupportedSglangVersion,
                       match=r"0.5.17.dev12\+g1a2b3c4 \(a build, judged by sglang 0.5.16.*force=True"):
        k3lab_patches.check_version(T.PATCH, build, force=False)
    k3lab_patches.check_version(T.PATCH, build, force=True)
    # a build on a release that has the fix is refused even forced, naming the fixing release
    assert k3lab_patches.status(T.PATCH, "0.5.18.dev4") == "fixed in 0.5.17"
    with pytest.raises(k3lab_patches.UpstreamFixed, match="first in sglang 0.5.19"):
        k3lab_patches.check_version(AH.PATCH, "0.5.20.dev1", force=True)
    # an unmeasured release (not a build) is refused unforced: nothing is inferred; forced, the patch's own
    # look at the code decides (tests/test_patches_force.py)
    assert not releases.is_build("0.5.24")
    with pytest.raises(k3lab_patches.UnsupportedSglangVersion, match="0.5.24 is not a release the matrix measured"):
        k3lab_patches.check_version(T.PATCH, "0.5.24", force=False)
    k3lab_patches.check_version(T.PATCH, "0.5.24", force=True)


# --------------------------------------------------------------------------- the command line

def _cli(*args):
    return subprocess.run([sys.executable, "-m", "k3lab_patches", *args], capture_output=True, text=True,
                          timeout=120)


def test_cli_status_and_its_errors():
    from importlib import metadata

    r = _cli("status")
    try:
        installed = metadata.version("sglang")
    except metadata.PackageNotFoundError:  # the study's .venv: one line, no traceback
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.count("\n") == 1 and "sglang is not installed" in r.stderr
    else:
        assert r.returncode == 0 and r.stdout.startswith(f"sglang {installed}\n")
        assert "  topk_renorm: " in r.stdout and "  aiter_head_pad: " in r.stdout
    r = _cli("bogus")
    assert r.returncode == 2 and "unknown command 'bogus'" in r.stderr
    # issue 35 (M10): a repeated --version was the last one, silently
    r = _cli("status", "--version", "0.5.16", "--version", "0.5.23")
    assert r.returncode == 2 and r.stdout == "" and r.stderr == (
        "k3lab_patches status: error: --version given twice ('0.5.16', then '0.5.23'): give it once\n")
    r = _cli("--help")
    assert r.returncode == 0 and "status" in r.stdout and "verify" in r.stdout and "serve" in r.stdout
    # newcomer 12: the help printed reST markup (``status``, :func:`...`)
    assert "``" not in r.stdout and ":func:" not in r.stdout and ":mod:" not in r.stdout
    assert "python -m k3lab_patches <status | verify | serve>" in r.stdout and "(k3lab_patches.status)" in r.stdout


def test_status_names_the_release_that_fixed_it_and_what_kimi_k3_needs(monkeypatch, capsys):
    """Issue 38: a renter needs "fixed in 0.5.17", not a PR number; that no release the patches were
    written for runs Kimi K3 (so --force); and that the fast prefill needs --attention-backend aiter.
    The releases below are the committed matrix's rows (data/measured/cpu-2core/sglang_release_matrix.json:
    topk crashes only in 0.5.16, AITER refuses 12 heads to 0.5.18, kimi_k3.py from 0.5.17, triton picked
    for 96 heads at TP8 on HIP in every release)."""
    from k3lab_patches import __main__ as M
    from k3lab_patches import aiter_head_pad as AH

    assert k3lab_patches.upstream_fix(T.PATCH, "0.5.16") == "0.5.17"
    assert k3lab_patches.upstream_fix(AH.PATCH, "0.5.17") == "0.5.19"
    assert k3lab_patches.upstream_fix(AH.PATCH, "0.5.18.dev3+gabc") == "0.5.19"     # a build: by its base release
    assert k3lab_patches.upstream_fix(AH.PATCH, "0.5.23") is None                  # none after the last measured
    assert k3lab_patches.upstream_fix(T.PATCH, "0.5.24") is None                   # unknown: nothing inferred
    facts = k3lab_patches.release_facts("0.5.16")
    assert "no Kimi K3 model module (first in sglang 0.5.17)" in facts[0]
    assert k3lab_patches.release_facts("0.5.23")[0] == "sglang 0.5.23 ships Kimi K3's model module"
    assert all("--attention-backend aiter" in k3lab_patches.release_facts(v)[1] for v in ("0.5.16", "0.5.23"))
    assert k3lab_patches.release_facts("0.5.24") == []
    note = k3lab_patches.force_note()
    assert "sglang 0.5.16 (which cannot run Kimi K3)" in note and "(0.5.17, 0.5.18) status says 'needed, untested'" in note
    assert ("on a K3 branch image 'needed, untested' where it is built on a measured release (judged by that release's "
            "row) and 'unknown' where it is older than sglang 0.5.16, the oldest measured") in note
    assert "from sglang 0.5.19 none is needed" in note
    monkeypatch.setattr(k3lab_patches, "sglang_version", lambda: "0.5.17")
    assert M.status_main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == ("  topk_renorm: not needed: fixed in 0.5.17 (sglang PR #32641: Triton top-k and top-p renorm "
                      "bound on HIP)")
    assert out[2].startswith("  aiter_head_pad: needed, untested (apply with --force); fixed upstream in sglang 0.5.19")
    assert out[-1] == f"note: {note}"   # 0.5.17 still wants a patch: how --force works is said
    # newcomer 9 (Q4): on a release that needs nothing the --force note was noise; it says that instead
    for v in ("0.5.19", "0.5.23"):
        assert M.status_main(["--version", v]) == 0
        out = capsys.readouterr().out.splitlines()
        assert " not needed: fixed in 0.5.17 " in out[1] and out[2].startswith("  aiter_head_pad: not needed: sglang ")
        # newcomer 38: the patch goes, the padding does not, each release in its own terms
        assert ("sglang pads 12 heads to 16 and slices back itself from 0.5.22 (PR #34438, likely), as this patch does: "
                "the padding is still what AITER's fast fp8 prefill needs (--attention-backend aiter), the patch is not; "
                "load-test it on the MI355X: sglang PR #33341 (open)" in out[2]) == (v == "0.5.23")
        assert ("sglang accepts 12 heads per rank from 0.5.19 (PR #34647), unpadded, on the non-fp8 prefill; its padded "
                "fp8 prefill comes in 0.5.22 (PR #34438, likely)" in out[2]) == (v == "0.5.19")
        assert out[-1] == "note: this release needs no k3lab patch" and "--force" not in "\n".join(out)
    # newcomer 12: a release after every measured one read "unknown ... applies only with --force", a nudge to force
    # a patch the newest measured release (which has both fixes) no longer needs; it says so, and forces nothing
    newest = __import__("k3lab_patches.releases", fromlist=["load"]).load()["rows"][-1]["sglang"]
    for v in ("0.5.24", "0.5.30"):
        assert M.status_main(["--version", v]) == 0
        out = capsys.readouterr().out.splitlines()
        assert all(f": unknown: not in the measured matrix, but later than sglang {newest}, the newest measured, which "
                   "has the fix: most likely fixed here too" in x for x in out[1:3])
        assert out[-1].startswith("note: a release after every measured one") and "K3LAB_PATCHES_FORCE" not in out[-1]
    assert k3lab_patches.newest_measured_fixed(T.PATCH, "0.5.16") is None          # measured: status reads it
    assert k3lab_patches.newest_measured_fixed(T.PATCH, "not a version") is None
    # ... and the head pad's upstream history in one clause (every PR the upstream data records still named)
    assert len(AH.PATCH.fixed_by) < 200


@pytest.mark.parametrize("args, says", [
    # issue 35: an AssertionError traceback from torch ("Torch not compiled with CUDA enabled")
    (["--device", "cuda"], "--device cuda: this torch"),
    (["--device", "cuda:3"], "sees no CUDA or ROCm device here"),
    (["--device", "nonsense"], "--device 'nonsense' is not a torch device"),
    (["--device", "meta"], "--device meta holds no values"),
    # issue 35: no cap (a 99,999,999,999-entry vocabulary is 12.8 TB of logits)
    (["--vocab", "99999999999"], "argument --vocab: must be an integer from 64 to 1,048,576"),
    (["--vocab", "9" * 5000], "argument --vocab: must be an integer from 64 to 1,048,576"),
    (["--vocab", "10"], "got 10"),
    (["--vocab", "lots"], "got 'lots'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_verify_refuses_at_the_door_in_one_line(capsys, args, says):
    import torch

    from k3lab_patches import verify

    if torch.cuda.is_available() and args[0] == "--device" and args[1].startswith("cuda"):
        pytest.skip("a CUDA device is here: --device cuda is usable (the CPU box is this test's case)")
    try:
        rc = verify.main(args)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1, (rc, out, err)
    assert err.startswith("k3lab_patches verify: error: ") and says in err and len(err) < 300, err


def test_the_study_and_the_package_share_one_one_line_parser():
    from k3lab_patches import oneline

    from k3lab import cli_parser

    assert issubclass(cli_parser.OneLineParser, oneline.OneLineParser)
    assert cli_parser.OneLineParser.error is oneline.OneLineParser.error and cli_parser.OneLineParser.prefix == "k3lab"


# --------------------------------------------------------------------------- status --version (offline)

@pytest.mark.parametrize("version, lines", [
    # the late-July K3 branch build (data/public_measurements.yaml): below 0.5.16, the oldest measured row
    ("0.5.15.post1.dev20260723+g6c9fd0adc5", [
        "sglang 0.5.15.post1.dev20260723+g6c9fd0adc5 (--version: not the installed sglang)",
        "  topk_renorm: unknown: ", "sglang 0.5.17, measured, has the fix",
        "  aiter_head_pad: unknown: ", "sglang 0.5.19, measured, has the fix",
        "  a build older than sglang 0.5.16, the oldest measured"]),
    # the matrix: 0.5.18 ships kimi_k3.py, its top-k fixed in 0.5.17, AITER refusing 12 heads until 0.5.19
    ("0.5.18", ["sglang 0.5.18 (--version: not the installed sglang)", "  topk_renorm: not needed: fixed in 0.5.17",
                "  aiter_head_pad: needed, untested (apply with --force); fixed upstream in sglang 0.5.19",
                "  sglang 0.5.18 ships Kimi K3's model module", "picks the triton attention backend"]),
])
def test_status_of_a_version_given_needs_no_sglang(version, lines):
    r = _cli("status", "--version", version)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    for want in lines:
        assert want in r.stdout, (want, r.stdout)


@pytest.mark.parametrize("args, says", [
    (["--version", "main"], "--version 'main' is not a PEP 440 version"),
    (["--version"], "argument --version: expected one argument"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_status_refuses_a_bad_version_in_one_line(args, says):
    r = _cli("status", *args)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("k3lab_patches status: error: ") and says in r.stderr, r.stderr


def test_status_without_sglang_says_to_pass_version(monkeypatch, capsys):
    from k3lab_patches import __main__ as M

    def missing():
        raise RuntimeError("sglang is not installed in this environment")
    monkeypatch.setattr(k3lab_patches, "sglang_version", missing)
    with pytest.raises(SystemExit) as e:
        M.status_main([])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and err.count("\n") == 1
    assert "sglang is not installed" in err and "pass --version X" in err


# --------------------------------------------------------------------------- who fixed what upstream

def test_the_patches_credit_the_pull_requests_the_upstream_data_records():
    """data/sglang_upstream_changes.yaml: #34647 (0.5.19) accepts 12 heads with the 12-head fp8 Gluon decode and
    gates prefill to flash_attn_varlen_func; #36356 (0.5.19) adds pad_heads not yet reached; #34438 (0.5.22) removes
    the gate so the fp8 ASM prefill pads 12 -> 16. The patch's words and docs/operators.md must say the same."""
    from k3lab_patches import aiter_head_pad as AH

    from k3lab import data

    by_pr = {c.pr: c for c in data.load("upstream_changes").changes if c.pr}
    for role, (release, pr) in AH.PATCH.UPSTREAM.items():
        assert by_pr[pr].release == release, (role, pr)
        assert f"#{pr}" in AH.PATCH.fixed_by
    assert "decode" in by_pr[AH.PATCH.UPSTREAM["accepts"][1]].change
    assert "prefill pads 12 -> 16" in by_pr[AH.PATCH.UPSTREAM["prefill"][1]].change
    assert "not yet reached" in by_pr[AH.PATCH.UPSTREAM["pad_heads"][1]].change
    assert by_pr[32641].release == "0.5.17" and "#32641" in T.PATCH.fixed_by
    ops = (PATCHES_DIR.parent / "docs" / "operators.md").read_text(encoding="utf-8")
    assert "PR #34438" in ops and "PR #34647" in ops and "PR #36356" in ops
    assert "(PR #34647: sglang accepts 12 heads per rank itself)" not in ops


def test_status_into_a_closed_pipe_ends_quietly():
    """Second attack: `python -m k3lab_patches status --version 0.5.23 | head -1` printed a BrokenPipeError traceback."""
    import subprocess
    import sys

    r = subprocess.run(f"{sys.executable} -m k3lab_patches status --version 0.5.23 | head -1", shell=True,
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.startswith("sglang 0.5.23") and r.stdout.count("\n") == 1
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


# --------------------------------------------------------------------------- the plugin's switch (issue 35, S4)


@pytest.mark.parametrize("enable, force, named", [
    ("yes", None, "K3LAB_PATCHES='yes'"), ("true", None, "K3LAB_PATCHES='true'"), ("on", None, "K3LAB_PATCHES='on'"),
    ("1", "yes", "K3LAB_PATCHES_FORCE='yes'"),
])
def test_the_plugin_says_unpatched_for_a_value_it_does_not_read(monkeypatch, capsys, enable, force, named):
    """Only 1 turns the patches on; yes/true/on used to leave sglang unpatched without a word."""
    from k3lab_patches import plugin

    monkeypatch.setenv(plugin.ENV_ENABLE, enable)
    if force is None:
        monkeypatch.delenv(plugin.ENV_FORCE, raising=False)
    else:
        monkeypatch.setenv(plugin.ENV_FORCE, force)
    monkeypatch.setattr(k3lab_patches, "apply", lambda **kw: pytest.fail("must not patch"))
    assert plugin.sglang_plugin() == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("k3lab_patches: sglang is running UNPATCHED (pid "), err
    assert f"{named} is not a value k3lab_patches reads" in err and "=1 to " in err and "0 or unset" in err, err


@pytest.mark.parametrize("enable, force", [(None, None), ("0", None), ("", None), ("0", "nonsense")])
def test_the_plugin_is_silent_when_off(monkeypatch, capsys, enable, force):
    from k3lab_patches import plugin

    for name, v in ((plugin.ENV_ENABLE, enable), (plugin.ENV_FORCE, force)):
        if v is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, v)
    monkeypatch.setattr(k3lab_patches, "apply", lambda **kw: pytest.fail("must not patch"))
    assert plugin.sglang_plugin() == [] and capsys.readouterr().err == ""


def test_status_all_is_the_release_matrix_in_one_table():
    """Newcomer 15 (Q4): three release numbers in one README paragraph, 'the crash' and 'running K3' two bars read
    as one. `status --all` lists every measured release with each, read here from the study's committed matrix
    and upstream data (not from the shipped verdicts the command reads)."""
    from k3lab import data

    r = _cli("status", "--all")
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["sglang", "runs", "K3", "top-k", "crash", "on", "HIP", "12", "heads,", "AITER",
                                "prefill", "k3lab", "patch"]
    matrix = release_status.load_matrix()["rows"]
    key = k3lab.versions.version_key
    rows = {}   # each release's row (a row of a range "0.5.17–0.5.18" is each of its releases')
    for x in lines[2:]:
        if x[:1].isdigit():
            lo, _, hi = x.split()[0].partition("–")
            rows.update({m["sglang"]: x for m in matrix if key(lo) <= key(m["sglang"]) <= key(hi or lo)})
    assert list(rows) == [m["sglang"] for m in matrix] and len(lines) < len(matrix) + 6   # ranges share a row
    by_pr = {c.pr: c for c in data.load("upstream_changes").changes if c.pr}
    for m in matrix:
        v, row = m["sglang"], rows[m["sglang"]]
        cells = [c.strip() for c in re.split(r"\s{2,}", row)]
        assert cells[1] == ("yes" if m["kimi_k3"]["model_file"] else "no"), row
        crash = release_status.hip_verify_crashes(m)
        assert cells[2].startswith("crashes" if crash else "fixed"), row
        refuses = release_status.aiter_refuses_12_heads(m)
        padded = k3lab.versions.version_key(v) >= k3lab.versions.version_key(by_pr[34438].release)
        assert cells[3].startswith("refused" if refuses else "sglang pads to 16, fp8" if padded else
                                   "accepted, unpadded"), row
        wanted = [n for n, broken in (("top-k", crash), ("head pad", refuses)) if broken]
        # (newcomer 41: "recommended" beside the open PR fencing the padded fp8 kernel on gfx950: load-test it)
        assert cells[4] == ("none: recommended, load-test" if padded else "none" if not wanted else
                            "both (tested on its code)" if len(wanted) == 2 else
                            f"{wanted[0]}{', for aiter' if wanted == ['head pad'] else ''}, --force (written for 0.5.16)"), row
    # the first release with each fix names its pull request, from the upstream data
    assert "fixed (PR #32641)" in rows[by_pr[32641].release] and "(PR #34647)" in rows[by_pr[34647].release]
    assert "(PR #34438, likely)" in rows[by_pr[34438].release]
    flat = " ".join(r.stdout.split())
    # (newcomers 49-50: no row for the NameError the question names): the article's images, first, from the study's
    # emulation (the top-k transcript's PR #32621 state and its exception) and the version public runs on them report
    topk = data.load("sglang_topk_repro")
    assert topk["crash"]["last_line"].startswith("NameError: name 'top_k_renorm_prob' is not defined")
    img = [c.strip() for c in re.split(r"\s{2,}", lines[2])]
    assert img == ["K3 images (0.5.15.post1.dev20260723)", "yes", "NameError (emulated)",
                   "refused" if release_status.aiter_refuses_12_heads(matrix[0]) else "?", "both, --force (status: unknown; untested)"]
    # ... and the release the transcript ran says which exception it raised there (newcomer 51: only in the bottom line)
    raised = {x["error"].split(":")[0] for x in topk["rows"] if x["state"] == topk["sglang_version"] and x["outcome"] != "ok"}
    assert raised == {"TypeError"} and re.search(rf"^{re.escape(topk['sglang_version'])} .* crashes \(TypeError\) ",
                                                 "\n".join(lines), re.M)
    assert any("reporting 0.5.15.post1.dev20260723" in " ".join((m.engine_version or "").split())
               for m in data.load("public_measurements").measurements)
    assert (f"K3 images: the article's branch builds, outside the matrix (the row: the study's emulation of their code, "
            f"{topk['state_labels']['pr32621'].split(' (')[-1].rstrip(')')})") in flat
    # (newcomer 47: "none: recommended" beside the open PR fencing that kernel): what "load-test" asks, from the
    # release sglang pads in, with the PR the study's conclusion cites and the switch that falls back
    from k3lab.findings.conclusions import UPSTREAM

    assert "PR #33341 (open" in UPSTREAM
    assert (f"from {by_pr[34438].release}: load-test it on the MI355X: sglang PR #33341 (open) fences this padded fp8 "
            "prefill off on gfx950, where it memory-faulted; if it faults, SGLANG_AITER_FP8_PREFILL_ATTN=false") in flat
    assert "--attention-backend aiter" in flat and all(len(x) <= 118 for x in lines[-4:])
    bad = _cli("status", "--all", "--version", "0.5.16")
    assert bad.returncode == 2 and bad.stderr.strip() == "k3lab_patches status: error: --all lists every release: drop --version"


def test_status_by_version_needs_no_torch():
    """Newcomer 23: `pip install --no-deps` of the wheel into a bare venv (a laptop checking an image's version, as
    docs/operators.md suggests), then `status --version 0.5.17`, died with ModuleNotFoundError: torch. The patches'
    torch code is imported on first use; status reads versions only. Here torch is made unimportable."""
    code = ("import runpy, sys; sys.modules['torch'] = None; "
            "sys.argv = ['k3lab_patches', 'status', '--version', '0.5.17']; "
            "runpy.run_module('k3lab_patches', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "aiter_head_pad: needed, untested (apply with --force)" in r.stdout and "Traceback" not in r.stderr
    # and the lazy names still reach the real functions where torch is there
    from k3lab_patches import aiter_head_pad, topk_renorm

    assert callable(topk_renorm.sampling.top_k_renorm_prob) and aiter_head_pad.A.padded_heads(12) == 16


def test_verify_without_torch_is_one_line():
    """Attack 7: `verify` in a bare venv (the wheel installed --no-deps, no torch) died with a traceback. It says in
    one line that it runs in the image, exit 2."""
    code = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = ['k3lab_patches', 'verify']; "
            "runpy.run_module('k3lab_patches', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == ["k3lab_patches verify: error: verify needs torch (and sglang): run it in "
                                             "the image that serves Kimi K3, where both are installed"]

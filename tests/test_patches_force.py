"""k3lab-patches on a K3 branch image: sglang installed from a git checkout reports a version the
release matrix never measured (data/public_measurements.yaml records the late-July build as
``0.5.15.post1.dev20260723+g6c9fd0adc5``). Without --force the patch refuses and says to force;
with it, the patch applies exactly when the code it replaces is there with the signatures it calls
(``k3lab_patches.preconditions``), else refuses in one line naming what is missing. Each test runs
against a fake sglang *installed* on sys.path (a dist-info with that version, and the modules the
patches touch), so the version comes from importlib.metadata as on the image."""

import sys
import textwrap

import k3lab_patches as patches
import pytest
from k3lab_patches import plugin, serve

BRANCH = "0.5.15.post1.dev20260723+g6c9fd0adc5"

DFLASH = '''
top_p_renorm_prob = lambda probs, top_ps: probs   # PR #32621's state: top-p bound, top-k never bound


def build_dflash_verify_target_probs(*, next_token_logits, sampling_info, draft_token_num, bs):
    return top_k_renorm_prob(next_token_logits, None)
'''

AITER = '''
class AiterAttnBackend:
    def __init__(self, model_runner, skip_prefill=False):
        self.model_runner = model_runner

    def mla_fp8_prefill_attn(self, q, k, v, layer):
        return q

    def _mla_decode_fwd_with_head_pad(self, q, k_buffer_flat, layer, **kwargs):
        return q
'''


def _install(root, dflash=DFLASH, aiter=AITER, version=BRANCH):
    """A fake sglang under ``root``: ``sglang-<version>.dist-info`` and the two modules patched."""
    (root / f"sglang-{version}.dist-info").mkdir(parents=True)
    (root / f"sglang-{version}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n", encoding="utf-8")
    for pkg in ("sglang", "sglang/srt", "sglang/srt/speculative", "sglang/srt/layers", "sglang/srt/layers/attention"):
        (root / pkg).mkdir(parents=True, exist_ok=True)
        (root / pkg / "__init__.py").write_text("", encoding="utf-8")
    (root / "sglang/srt/speculative/dflash_utils.py").write_text(textwrap.dedent(dflash), encoding="utf-8")
    (root / "sglang/srt/layers/attention/aiter_backend.py").write_text(textwrap.dedent(aiter), encoding="utf-8")


@pytest.fixture
def image(tmp_path, monkeypatch):
    """Install a fake sglang (call it with the module sources) → the imported modules after apply."""
    def make(**kw):
        _install(tmp_path / "site", **kw)
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
        return tmp_path / "site"

    for m in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        monkeypatch.delitem(sys.modules, m)
    monkeypatch.delenv(plugin.ENV_ENABLE, raising=False)
    monkeypatch.delenv(plugin.ENV_FORCE, raising=False)
    yield make
    patches.revert()
    for m in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        del sys.modules[m]


def test_the_branch_image_is_unknown_to_the_matrix_and_refused_unforced(image):
    image()
    assert patches.sglang_version() == BRANCH
    assert {patches.status(p, BRANCH) for p in patches._patches()} == {"unknown"}
    with pytest.raises(patches.UnsupportedSglangVersion) as e:
        patches.apply()
    msg = str(e.value)
    assert "\n" not in msg and "older than every measured release (0.5.16)" in msg
    assert "force=True (serve --force, K3LAB_PATCHES_FORCE=1)" in msg
    import sglang.srt.speculative.dflash_utils as du  # the fake branch module, untouched

    assert "top_k_renorm_prob" not in vars(du)


def test_forced_it_applies_when_the_code_is_as_the_patch_expects(image, capsys):
    image()
    assert serve.main(["--force", "--dry-run", "--", "--model-path", "m"]) == 0
    err = capsys.readouterr().err
    # the NameError state: top-k bound by the patch, the branch's own top-p kernel kept
    assert "sglang.srt.speculative.dflash_utils.top_k_renorm_prob" in err and "top_p_renorm_prob" not in err
    assert err.count("AiterAttnBackend.") == 3
    du = sys.modules["sglang.srt.speculative.dflash_utils"]
    assert du.top_k_renorm_prob.__module__ == "k3lab_patches.topk_renorm"
    assert du.top_p_renorm_prob.__name__ == "<lambda>"


@pytest.mark.parametrize("dflash, aiter, names", [
    (DFLASH.replace("def build_dflash_verify_target_probs", "def verify_probs"), AITER,
     "sglang.srt.speculative.dflash_utils.build_dflash_verify_target_probs is missing"),
    (DFLASH, AITER.replace("mla_fp8_prefill_attn(self, q, k, v, layer)", "mla_fp8_prefill_attn(self, qkv, layer)"),
     "AiterAttnBackend.mla_fp8_prefill_attn takes (self, qkv, layer), not (self, q, k, v, layer, …)"),
    (DFLASH, AITER.replace("_mla_decode_fwd_with_head_pad", "_mla_decode_fwd"),
     "AiterAttnBackend._mla_decode_fwd_with_head_pad is missing"),
])
def test_forced_it_refuses_in_one_line_naming_what_is_missing(image, capsys, dflash, aiter, names):
    image(dflash=dflash, aiter=aiter)
    assert serve.main(["--force", "--", "--model-path", "m"], runner=lambda a: pytest.fail("must not start")) == 2
    err = capsys.readouterr().err
    assert err.startswith("k3lab_patches serve: error: RuntimeError: ") and err.count("\n") == 1, err
    assert names in err and "refus" in err, err
    # all or nothing: the top-k binding of a patch that did apply is rolled back
    assert "top_k_renorm_prob" not in vars(sys.modules["sglang.srt.speculative.dflash_utils"])


def test_the_plugin_says_on_stderr_that_the_server_runs_unpatched(image, capsys, monkeypatch):
    """sglang's load_plugins logs a plugin's exception and starts the server anyway: the one line
    of our own is what tells the operator."""
    image()
    monkeypatch.setenv(plugin.ENV_ENABLE, "1")
    with pytest.raises(patches.UnsupportedSglangVersion):
        plugin.sglang_plugin()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("k3lab_patches: sglang is running UNPATCHED (pid ")
    assert "UnsupportedSglangVersion" in err and "K3LAB_PATCHES_FORCE=1 forces" in err
    monkeypatch.setenv(plugin.ENV_FORCE, "1")
    assert len(plugin.sglang_plugin()) == 4 and capsys.readouterr().err == ""

"""k3lab_patches (the distribution in patches/): topk_renorm / serve / plugin, without sglang:
a stand-in module object is put where sglang's dflash_utils would be; the real-sglang twin is
tests/sglang/ (test_topk_patch.py, test_patches_wheel.py)."""

import sys
import types

import k3lab_patches as patches
import pytest
from k3lab_patches import plugin, sampling, serve
from k3lab_patches import topk_renorm as T

MOD = "sglang.srt.speculative.dflash_utils"


@pytest.fixture
def fake_dflash(monkeypatch):
    m = types.ModuleType(MOD)
    m.top_k_renorm_prob = None
    m.top_p_renorm_prob = None
    m.build_dflash_verify_target_probs = lambda *, next_token_logits, sampling_info, **kw: None  # what calls them
    monkeypatch.setitem(sys.modules, MOD, m)
    patch = T.TopKRenormPatch()
    yield m, patch
    patch.revert()


def test_apply_binds_none_names_and_revert_restores(fake_dflash):
    m, patch = fake_dflash
    done = patch.apply("0.5.16")
    assert done == [f"{MOD}.top_k_renorm_prob", f"{MOD}.top_p_renorm_prob"]
    p = sampling.torch.tensor([[0.1, 0.3, 0.2, 0.2, 0.2]])
    assert m.top_k_renorm_prob(p, sampling.torch.tensor([2])).ne(0).sum() == 4
    assert patch.apply("0.5.16") == []  # idempotent
    assert sorted(patch.revert()) == done
    assert m.top_k_renorm_prob is None and m.top_p_renorm_prob is None


def test_missing_name_is_bound_then_removed(fake_dflash):
    m, patch = fake_dflash
    del m.top_k_renorm_prob  # the PR #32621 state
    assert f"{MOD}.top_k_renorm_prob" in patch.apply("0.5.16")
    assert callable(m.top_k_renorm_prob)
    patch.revert()
    assert not hasattr(m, "top_k_renorm_prob")


def test_real_kernel_left_alone(fake_dflash):
    m, patch = fake_dflash
    kernel = lambda probs, k: probs  # noqa: E731 - stands for sgl_kernel's on CUDA
    m.top_k_renorm_prob = kernel
    assert patch.apply("0.5.16") == [f"{MOD}.top_p_renorm_prob"]
    assert m.top_k_renorm_prob is kernel


def test_the_release_matrix_decides_which_releases_need_the_patch(fake_dflash):
    m, patch = fake_dflash
    # the committed matrix: 0.5.16 crashes on HIP, 0.5.17 binds sglang's Triton renorms (PR #32641)
    assert patches.status(patch, "0.5.16") == "needed"
    assert patches.status(patch, "0.5.23") == "fixed in 0.5.17"
    with pytest.raises(patches.UpstreamFixed, match="first in sglang 0.5.17"):
        patch.apply("0.5.23", force=True)
    with pytest.raises(patches.UnsupportedSglangVersion, match="9.9.9 is not a release the matrix measured.*force=True"):
        patch.apply("9.9.9")                  # never measured: nothing inferred, refused unforced
    assert m.top_k_renorm_prob is None
    assert patch.apply("9.9.9", force=True)   # forced: the code decides (the verifier and its names are there)
    del m.build_dflash_verify_target_probs
    patch.revert()
    with pytest.raises(RuntimeError, match="build_dflash_verify_target_probs is missing"):
        patch.apply("9.9.9", force=True)
    assert m.top_k_renorm_prob is None


def test_an_untested_release_that_still_has_the_bug_needs_force(monkeypatch):
    from k3lab_patches import aiter_head_pad as AH

    # the matrix: AITER refuses 12 heads in 0.5.16-0.5.18; the patch was written for 0.5.16
    assert patches.status(AH.PATCH, "0.5.17") == "needed, untested"
    with pytest.raises(patches.UnsupportedSglangVersion, match="force=True"):
        patches.check_version(AH.PATCH, "0.5.17", force=False)
    patches.check_version(AH.PATCH, "0.5.17", force=True)  # allowed
    assert patches.status(AH.PATCH, "0.5.19") == "fixed in 0.5.19"


class _FakePatch:
    def __init__(self, name, log, fail=False):
        self.name, self.log, self.fail = name, log, fail
        self.known_versions, self.fixed_by = frozenset({"0.5.16"}), "test"

    def broken(self, row):
        return True

    def apply(self, version, force=False):
        self.log.append(("apply", self.name))
        if self.fail:
            raise RuntimeError(f"{self.name} refuses midway")
        return [self.name]

    def revert(self):
        self.log.append(("revert", self.name))
        if self.fail == "revert":
            raise RuntimeError("cannot revert")
        return [self.name]


def test_apply_is_all_or_nothing(monkeypatch):
    log = []
    monkeypatch.setattr(patches, "sglang_version", lambda: "0.5.16")
    monkeypatch.setattr(patches, "_patches", lambda: [_FakePatch("a", log), _FakePatch("b", log, fail=True)])
    with pytest.raises(RuntimeError, match="b refuses midway"):
        patches.apply()
    # the first patch was applied, then rolled back when the second failed
    assert log == [("apply", "a"), ("apply", "b"), ("revert", "b"), ("revert", "a")]


def test_revert_tries_every_patch_and_reports_failures(monkeypatch):
    log = []
    monkeypatch.setattr(patches, "_patches", lambda: [_FakePatch("a", log), _FakePatch("b", log, fail="revert")])
    with pytest.raises(RuntimeError, match="b: RuntimeError: cannot revert.*restored: \\['a'\\]"):
        patches.revert()
    assert log == [("revert", "b"), ("revert", "a")]


def test_apply_refuses_a_release_that_needs_nothing(monkeypatch):
    monkeypatch.setattr(patches, "sglang_version", lambda: "0.5.23")
    with pytest.raises(patches.UpstreamFixed, match="needs no k3lab patch.*topk_renorm fixed in 0.5.17.*aiter_head_pad fixed in 0.5.19"):
        patches.apply()


def test_module_absent_gives_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, MOD, None)  # import of it raises ImportError
    with pytest.raises(RuntimeError, match="has no module"):
        T.TopKRenormPatch().apply("0.5.16")


def test_serve_splits_arguments():
    opts, rest = serve.split_argv(["--force", "--", "--model-path", "m", "--tp", "8", "--force"])
    assert opts == {"force": True, "dry_run": False}
    assert rest == ["--model-path", "m", "--tp", "8", "--force"]  # sglang's, untouched
    with pytest.raises(ValueError, match="unknown k3lab_patches serve option"):
        serve.split_argv(["--model-path", "m"])


def test_serve_applies_then_passes_arguments(monkeypatch):
    calls = []
    monkeypatch.setattr(patches, "apply", lambda force=False: calls.append(("apply", force)) or ["x.y"])
    monkeypatch.delenv(plugin.ENV_ENABLE, raising=False)
    got = serve.main(["--", "--model-path", "m", "--port", "31000"],
                     runner=lambda args: calls.append(("run", args)) or 0)
    assert got == 0
    assert calls == [("apply", False), ("run", ["--model-path", "m", "--port", "31000"])]
    import os
    assert os.environ[plugin.ENV_ENABLE] == "1"  # spawned sglang processes re-apply


def test_serve_errors(monkeypatch, capsys):
    assert serve.main([]) == 2
    def refuse(force=False):
        raise patches.UnsupportedSglangVersion("k3lab patch 'topk_renorm' does not know sglang 1.0")
    monkeypatch.setattr(patches, "apply", refuse)
    assert serve.main(["--", "--model-path", "m"], runner=lambda a: 0) == 2
    assert "does not know sglang 1.0" in capsys.readouterr().err
    def broken_backend(force=False):
        raise ImportError("cannot import name 'AiterAttnBackend'\nmore lines")
    monkeypatch.setattr(patches, "apply", broken_backend)
    assert serve.main(["--", "--model-path", "m"], runner=lambda a: 0) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ImportError: cannot import name 'AiterAttnBackend'" in err


def test_plugin_is_inert_without_env(monkeypatch):
    monkeypatch.delenv(plugin.ENV_ENABLE, raising=False)
    monkeypatch.setattr(patches, "apply", lambda force=False: pytest.fail("must not apply"))
    assert plugin.sglang_plugin() == []
    monkeypatch.setenv(plugin.ENV_ENABLE, "1")
    monkeypatch.setattr(patches, "apply", lambda force=False: ["a.b"])
    assert plugin.sglang_plugin() == ["a.b"]

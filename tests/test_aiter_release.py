"""k3lab.aiter_release against the installed AITER release (amd-aiter 0.1.7.post2.dev18, never imported).

The expected values below come from reading the release's files by hand (paths relative to
``.venv/amd-aiter-0.1.7.post2.dev18``, line numbers of that release), not from the parser:

* ``aiter_meta/csrc/py_itfs_cu/asm_mla.cu`` 408-411, ``mla_prefill_asm_fwd``:
  ``TORCH_CHECK(gqa_ratio == 16 || gqa_ratio == 128, ...)`` and ``TORCH_CHECK(num_kv_heads == 1)``;
  kernels ``mla_pfl_bf16_a16w16_causal_subQ16_mqa16`` / ``..._subQ128_mqa128``, both shipped in
  ``aiter_meta/hsa/gfx942/mla`` and ``aiter_meta/hsa/gfx950/mla``.
* ``aiter/mla.py`` 136-138 (``get_mgc = {16: 16, 128: 16}``; ``assert nhead in get_mgc``) for the
  non-persistent decode; 272-279 for the persistent decode (16, or 128 with fp8 KV, natively;
  ``nhead in range(32, 512 + 1, 16)`` with ``max_seqlen_q == 1`` folded to 16), bounded by
  ``aiter_meta/csrc/kernels/mla/metadata/v1_1_device.cuh`` 592-606 (fold when ``num_heads % 16 == 0``
  and ``< 128``, else ``num_heads`` must be 16 or 128).
* ``aiter_meta/csrc/kernels/mla/reduce.cu`` 476-516, ``MLA_MERGE_ROUTER``: (heads, v head dim) =
  (8, 128), (16, 128), (16, 512), (128, 128), (128, 512).
* ``aiter/ops/mha.py`` 1903-1914 (``can_impl_fmha_v3_fwd``: ``nhead_q % nhead_k == 0``; hdim_q 128,
  or 192 on gfx950 only); ``aiter_meta/hsa/gfx950/fmha_v3_fwd/fwd_hd192_hd128_bf16*.co`` exist,
  ``aiter_meta/hsa/gfx942/fmha_v3_fwd/`` has only ``fwd_hd128_*`` kernels.
* ``aiter_meta/csrc/py_itfs_ck/mha_varlen_fwd_kernels.cu`` 429: ``num_heads % num_heads_k == 0``.
"""

import shutil
import sys

import pandas as pd
import pytest

from k3lab import aiter_release as AR

VERSION = "0.1.7.post2.dev18"
MULTIPLES_16_TO_128 = {16, 32, 48, 64, 80, 96, 112, 128}


@pytest.fixture(scope="module")
def release():
    try:
        return AR.installed_release()
    except AR.ReleaseNotInstalled as e:  # a missing install is a failure, not a skip
        pytest.fail(f"{e}\n`make setup` installs the AITER release this test reads.", pytrace=False)


def _rule(release, family, arch):
    return AR.rule(family, arch, release)


# --------------------------------------------------------------------------- the release

def test_installed_release_is_the_pinned_pypi_wheel(release):
    assert release.version == VERSION == AR.AITER_PIN
    assert release.folder.name == f"amd-aiter-{VERSION}"
    hashes = AR.verify_record(release)  # the parsed files are byte-identical to the wheel's
    assert set(hashes) == set(AR.REQUIRED_FILES)


def test_parser_does_not_import_aiter(release):
    AR.head_rules(release)
    assert "aiter" not in sys.modules


def test_kernel_heads_from_file_names():
    assert AR.kernel_heads("mla_pfl_bf16_a16w16_causal_subQ16_mqa16") == 16
    assert AR.kernel_heads("mla_pfl_bf16_a16w16_causal_subQ128_mqa128") == 128
    assert AR.kernel_heads("mla_a8w8_qh16_qseqlen1_gqaratio16_ps") == 16
    assert AR.kernel_heads("mla_a8w8_qh128_m32x4_n16x2_msk0_ps") == 128
    assert AR.kernel_heads("fmoe_b16") is None


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_parser_finds_the_known_kernels(release, arch):
    ev = " ".join(_rule(release, "mla_prefill_asm", arch).evidence)
    assert f"hsa/{arch}/mla/mla_pfl_bf16_a16w16_causal_subQ16_mqa16.co" in ev
    assert f"hsa/{arch}/mla/mla_pfl_bf16_a16w16_causal_subQ128_mqa128.co" in ev
    assert "asm_mla.cu:408" in ev and "gqa_ratio == 16 || gqa_ratio == 128" in ev
    ev = " ".join(_rule(release, "mla_decode_asm_ps", arch).evidence)
    assert f"hsa/{arch}/mla/mla_a8w8_qh16_qseqlen1_gqaratio16_ps.co" in ev
    assert f"hsa/{arch}/mla/mla_a8w8_qh128_m32x4_n16x2_msk0_ps.co" in ev
    ev = " ".join(_rule(release, "mla_decode_asm", arch).evidence)
    assert f"hsa/{arch}/mla/mla_dec_stage1_bf16_a16w16_subQ16_mqa16.co" in ev


# --------------------------------------------------------------------------- the rules

@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_absorbed_asm_prefill_refuses_12_accepts_16(release, arch):
    assert not AR.accepts("mla_prefill_asm", arch, 12, release)
    assert AR.accepts("mla_prefill_asm", arch, 16, release)
    assert _rule(release, "mla_prefill_asm", arch).heads == {16, 128}
    # not the article's "4, 8, or multiples of 16": 4, 8 and 32…112 are refused too
    for n in (4, 8, 32, 48, 64, 96):
        assert not AR.accepts("mla_prefill_asm", arch, n, release)


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_decode_rules(release, arch):
    assert _rule(release, "mla_decode_asm", arch).heads == {16, 128}
    assert _rule(release, "mla_decode_asm_ps", arch).heads == MULTIPLES_16_TO_128
    assert not AR.accepts("mla_decode_asm_ps", arch, 12, release)
    assert not AR.accepts("mla_decode_asm_ps", arch, 8, release)


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_reduce_and_persistent_prefill(release, arch):
    assert AR.reduce_cases(release) == {128: {8, 16, 128}, 512: {16, 128}}
    assert _rule(release, "mla_reduce_v1_dv128", arch).heads == {8, 16, 128}
    assert _rule(release, "mla_reduce_v1_dv512", arch).heads == {16, 128}
    r = _rule(release, "mla_prefill_ps_asm", arch)  # the fp8 MHA-form prefill came later upstream
    assert not r.shipped and not r.accepts(16) and r.padded(12) is None


def test_flash_attention_families(release):
    fa950, fa942 = _rule(release, "fmha_v3_fwd", "gfx950"), _rule(release, "fmha_v3_fwd", "gfx942")
    assert fa950.any_count and fa950.accepts(12) and fa950.accepts(7)
    assert not fa942.shipped and not fa942.accepts(12)  # no hd192 kernel on gfx942 → CK
    assert any("fwd_hd192_hd128_bf16_causal.co" in e for e in fa950.evidence)
    for arch in ("gfx942", "gfx950"):
        assert AR.accepts("mha_fwd_ck", arch, 12, release)
    # with head dims 128/128 the gfx942 ASM kernels (MI300/, MI308/ fwd_hd128_*) do apply
    r = {(x.family, x.arch): x for x in AR.head_rules(release, qk_head_dim=128, v_head_dim=128)}
    assert r[("fmha_v3_fwd", "gfx942")].accepts(12)


def test_tp_table_for_96_heads(release):
    t = AR.tp_table(96, (1, 2, 4, 8, 16, 32), release_dir=release)
    per_rank = [96, 48, 24, 12, 6, 3]
    assert sorted(set(zip(t.tp, t.heads_per_rank))) == list(zip([1, 2, 4, 8, 16, 32], per_rank))

    def col(family, arch, name):
        s = t[(t.family == family) & (t.arch == arch)].sort_values("tp")[name]
        return [None if pd.isna(v) else v for v in s.tolist()]

    for arch in ("gfx942", "gfx950"):
        assert col("mla_prefill_asm", arch, "accepted") == [False] * 6
        assert col("mla_prefill_asm", arch, "padded_heads") == [128, 128, 128, 16, 16, 16]
        assert col("mla_decode_asm_ps", arch, "accepted") == [True, True, False, False, False, False]
        assert col("mla_decode_asm_ps", arch, "padded_heads") == [96, 48, 32, 16, 16, 16]
        assert col("mla_reduce_v1_dv128", arch, "padded_heads") == [128, 128, 128, 16, 8, 8]
        assert col("mha_fwd_ck", arch, "accepted") == [True] * 6
    assert col("fmha_v3_fwd", "gfx950", "padded_heads") == per_rank
    assert col("fmha_v3_fwd", "gfx942", "accepted") == [False] * 6
    assert col("fmha_v3_fwd", "gfx942", "padded_heads") == [None] * 6
    tp8 = t[(t.tp == 8) & (t.family == "mla_prefill_asm") & (t.arch == "gfx950")].iloc[0]
    assert tp8.heads_per_rank == 12 and tp8.padded_heads == 16
    assert tp8.extra_attention_flops_pct == pytest.approx(100 * 4 / 12, abs=1e-3)


def test_bad_input(release):
    with pytest.raises(ValueError, match="unknown kernel family"):
        AR.accepts("mla_prefil_asm", "gfx950", 16, release)
    with pytest.raises(ValueError, match="unknown arch"):
        AR.accepts("mla_prefill_asm", "gfx90a", 16, release)
    with pytest.raises(ValueError, match="positive"):
        AR.accepts("mla_prefill_asm", "gfx950", 0, release)
    with pytest.raises(ValueError, match="does not divide"):
        AR.tp_table(96, (5,), release_dir=release)


# --------------------------------------------------------------------------- fake releases

def _fake_release(release, dest, skip=()):
    """A release folder holding the parsed text files and empty stand-ins for the kernels."""
    info = next(release.folder.glob("amd_aiter-*.dist-info"))
    (dest / info.name).mkdir(parents=True)
    shutil.copy(info / "METADATA", dest / info.name / "METADATA")
    for f in AR.REQUIRED_FILES:
        if f not in skip:
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(release.folder / f, dest / f)
    for arch in AR.ARCHS:
        for sub in ("mla", "fmha_v3_fwd"):
            rel = f"aiter_meta/hsa/{arch}/{sub}"
            if rel in skip:
                continue
            for p in (release.folder / rel).rglob("*.co"):
                q = dest / p.relative_to(release.folder)
                q.parent.mkdir(parents=True, exist_ok=True)
                q.touch()
    return dest


def test_missing_install_tells_how_to_install(tmp_path):
    with pytest.raises(AR.ReleaseNotInstalled) as e:
        AR.installed_release(folder=tmp_path / "nowhere")
    msg = str(e.value)
    assert "make setup" in msg
    assert f"pip install --no-deps --target .venv/amd-aiter-{VERSION} amd-aiter=={VERSION}" in msg


@pytest.mark.parametrize("missing", ["aiter_meta/csrc/py_itfs_cu/asm_mla.cu", "aiter/mla.py",
                                     "aiter_meta/hsa/gfx950/mla"])
def test_fake_release_lacking_a_file_names_it(release, tmp_path, missing):
    fake = _fake_release(release, tmp_path / "aiter", skip=(missing,))
    with pytest.raises(AR.ReleaseFileMissing, match=missing.replace(".", r"\.")):
        AR.head_rules(fake)


def test_rules_follow_the_files_not_hand_typed(release, tmp_path):
    fake = _fake_release(release, tmp_path / "aiter")
    assert AR.rule("mla_prefill_asm", "gfx950", fake).heads == {16, 128}
    # a release that checked for 12 as well and shipped a 12-head kernel for gfx950 only
    f = fake / AR.F_ASM_MLA
    f.write_text(f.read_text().replace("gqa_ratio == 16 || gqa_ratio == 128",
                                       "gqa_ratio == 12 || gqa_ratio == 16 || gqa_ratio == 128")
                 .replace('"/mla/mla_pfl_bf16_a16w16_causal_subQ16_mqa16.co");',
                          '"/mla/mla_pfl_bf16_a16w16_causal_subQ16_mqa16.co");\n'
                          '            static const char* k12 = "/mla/mla_pfl_bf16_causal_subQ16_mqa12.co";'))
    (fake / "aiter_meta/hsa/gfx950/mla/mla_pfl_bf16_causal_subQ16_mqa12.co").touch()
    fake2 = tmp_path / "aiter2"
    shutil.copytree(fake, fake2)  # a fresh folder: rules are cached per folder
    assert AR.rule("mla_prefill_asm", "gfx950", fake2).heads == {12, 16, 128}
    assert AR.rule("mla_prefill_asm", "gfx942", fake2).heads == {16, 128}


def test_unrecognised_check_is_an_error_not_a_guess(release, tmp_path):
    fake = _fake_release(release, tmp_path / "aiter")
    f = fake / AR.F_ASM_MLA
    f.write_text(f.read_text().replace("gqa_ratio == 16 || gqa_ratio == 128", "gqa_ratio % 16 == 0"))
    with pytest.raises(ValueError, match=r"asm_mla\.cu:\d+: head check"):
        AR.head_rules(fake)

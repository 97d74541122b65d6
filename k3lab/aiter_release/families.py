"""Each AITER kernel family's head rule, derived from the release's files.

One function per family reads the checks that decide which q-head counts per rank reach
the kernel (C++ ``TORCH_CHECK`` conditions and branches, the Python dispatch, the kernel
files shipped per architecture) and returns a :class:`HeadRule` per architecture, each
with the "file:line what" evidence it rests on. :func:`derive_all` runs them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..data import check_count
from .files import (AITER_PIN, ARCHS, F_ASM_MLA, F_ATTN_PY, F_CK_VARLEN, F_MHA_PY, F_META_V11,
                    F_META_V12, F_MLA_PY, F_REDUCE, Release, hsa_fmha, hsa_mla)
from .source import (blank_c_comments, c_function, checks, ints, is_persistent_kernel,
                     kernel_heads, line_of, py_function)

#: Kernel families, in table order.
FAMILIES = (
    "mla_prefill_asm",      # absorbed-form MLA prefill, bf16, mla_prefill_asm_fwd
    "mla_prefill_ps_asm",   # MHA-form fp8 persistent MLA prefill, mla_prefill_ps_asm_fwd
    "mla_decode_asm",       # absorbed-form MLA decode, non-persistent (mla_decode_fwd)
    "mla_decode_asm_ps",    # absorbed-form MLA decode, persistent mode (bf16 / fp8 `_ps` kernels)
    "mla_reduce_v1_dv128",  # split-KV reduction mla_reduce_v1 at v head dim 128 (MHA-form prefill)
    "mla_reduce_v1_dv512",  # mla_reduce_v1 at v head dim 512 (= kv_lora_rank, absorbed decode)
    "fmha_v3_fwd",          # ASM flash-attention fwd (flash_attn_varlen_func), qk 192 / v 128
    "mha_fwd_ck",           # CK flash-attention fwd fallback (mha_varlen_fwd), JIT-compiled
)


@dataclass(frozen=True)
class HeadRule:
    """What one kernel family accepts on one architecture, derived from the release files.

    ``heads``: the accepted q heads per rank (a finite set), or None when any count is
    accepted (``any_count``); an empty set when the family is not usable on ``arch``.
    ``rule``: the rule in words. ``evidence``: "file:line what" strings (files relative
    to the release folder) and the kernel files that back it.
    """

    family: str
    arch: str
    shipped: bool
    heads: frozenset[int] | None
    rule: str
    evidence: tuple[str, ...]

    @property
    def any_count(self) -> bool:
        return self.heads is None

    def accepts(self, n: int) -> bool:
        """Whether ``n`` q heads per rank reach this kernel family on this arch."""
        n = check_count("heads per rank", n)
        return self.shipped and (self.heads is None or n in self.heads)

    def padded(self, n: int) -> int | None:
        """Smallest accepted head count ≥ ``n`` (``n`` itself if accepted); None if none."""
        n = check_count("heads per rank", n)
        if not self.shipped:
            return None
        if self.heads is None:
            return n
        larger = sorted(h for h in self.heads if h >= n)
        return larger[0] if larger else None


def _kernel_files(release: Release, arch: str, names) -> list[str]:
    """The subset of ``names`` shipped as ``aiter_meta/hsa/<arch>/mla/<name>.co``."""
    d = release.path(hsa_mla(arch))
    return sorted(n for n in set(names) if (d / f"{n}.co").is_file())


def _mla_prefill_rules(release: Release) -> list[HeadRule]:
    raw = release.read(F_ASM_MLA)
    text = blank_c_comments(raw)
    off, body = c_function(text, "mla_prefill_asm_fwd", F_ASM_MLA)
    gqa_allowed, kv_required, ev = None, None, []
    for cond, line in checks(body, off, text):
        if "gqa_ratio" in cond:
            vals = ints(r"gqa_ratio\s*==\s*(\d+)", cond)
            if not vals or re.search(r"gqa_ratio\s*(?:!=|<|>)", cond):
                raise ValueError(f"{F_ASM_MLA}:{line}: head check {cond!r} not understood")
            gqa_allowed = vals if gqa_allowed is None else gqa_allowed & vals
            ev.append(f"{F_ASM_MLA}:{line} mla_prefill_asm_fwd TORCH_CHECK({cond})")
        elif "num_kv_heads" in cond:
            kv_required = ints(r"num_kv_heads\s*==\s*(\d+)", cond)
            ev.append(f"{F_ASM_MLA}:{line} mla_prefill_asm_fwd TORCH_CHECK({cond})")
        elif "head" in cond and "head_size" not in cond:
            raise ValueError(f"{F_ASM_MLA}:{line}: head check {cond!r} not understood")
    if gqa_allowed is None:
        raise ValueError(f"{F_ASM_MLA}: mla_prefill_asm_fwd has no gqa_ratio check (layout changed)")
    if kv_required != frozenset({1}):
        raise ValueError(f"{F_ASM_MLA}: mla_prefill_asm_fwd kv-head check is {kv_required}, expected one KV head")
    qtypes = sorted(set(re.findall(r"Q\.dtype\(\)\s*==\s*at::ScalarType::(\w+)", body)))
    names = re.findall(r'"/mla/(\w+)\.co"', body)
    if not names:
        raise ValueError(f"{F_ASM_MLA}: mla_prefill_asm_fwd names no /mla/*.co kernel (layout changed)")
    # Python wrapper: mla_prefill_fwd must not add a head check of its own.
    mla_py = release.read(F_MLA_PY)
    poff, psrc = py_function(mla_py, "mla_prefill_fwd", F_MLA_PY)
    if re.search(r"assert[^\n]*nhead", psrc):
        raise ValueError(f"{F_MLA_PY}: mla_prefill_fwd asserts on nhead (not parsed)")
    ev.append(f"{F_MLA_PY}:{line_of(mla_py, poff)} mla_prefill_fwd: no head-count assert, "
              f"calls mla_prefill_asm_fwd with nhead unchanged")
    rules = []
    for arch in ARCHS:
        present = _kernel_files(release, arch, names)
        built = frozenset(h for h in (kernel_heads(n) for n in present) if h is not None)
        acc = built & gqa_allowed
        rules.append(HeadRule(
            "mla_prefill_asm", arch, bool(acc), acc,
            f"q heads per rank (1 KV head, Q dtype {'/'.join(qtypes)}) in {sorted(acc)}: "
            f"TORCH_CHECK allows {sorted(gqa_allowed)}, kernels built for {sorted(built)}",
            tuple(ev) + tuple(f"{hsa_mla(arch)}/{n}.co (heads {kernel_heads(n)})" for n in present)))
    return rules


def _mla_prefill_ps_rules(release: Release) -> list[HeadRule]:
    text = blank_c_comments(release.read(F_ASM_MLA))
    has_fn = re.search(r"\bvoid\s+mla_prefill_ps_asm_fwd\s*\(", text) is not None
    rules = []
    for arch in ARCHS:
        kernels = sorted(p.stem for p in release.path(hsa_mla(arch)).glob("mla_pfl_qh*_vh*.co"))
        if has_fn or kernels:
            raise ValueError(
                f"amd-aiter {release.version} ships the MHA-form persistent prefill "
                f"(mla_prefill_ps_asm_fwd / {kernels}); k3lab.aiter_release was written for the "
                f"{AITER_PIN} layout, which lacks it, and does not parse its rule")
        rules.append(HeadRule(
            "mla_prefill_ps_asm", arch, False, frozenset(),
            "not shipped in this release: no mla_prefill_ps_asm_fwd in asm_mla.cu and no "
            "mla_pfl_qh*_vh*.co kernel",
            (f"{F_ASM_MLA}: no function mla_prefill_ps_asm_fwd",
             f"{hsa_mla(arch)}/: no mla_pfl_qh*_vh*.co")))
    return rules


def _decode_parts(release: Release):
    raw = release.read(F_ASM_MLA)
    text = blank_c_comments(raw)
    off, body = c_function(text, "mla_decode_stage1_asm_fwd", F_ASM_MLA)
    branches = ints(r"gqa_ratio\s*==\s*(\d+)", body)
    if not branches:
        raise ValueError(f"{F_ASM_MLA}: mla_decode_stage1_asm_fwd has no gqa_ratio branch (layout changed)")
    kv_line = None
    for cond, line in checks(body, off, text):
        if "num_kv_heads" in cond:
            if ints(r"num_kv_heads\s*==\s*(\d+)", cond) != frozenset({1}):
                raise ValueError(f"{F_ASM_MLA}:{line}: kv-head check {cond!r} not understood")
            kv_line = line
        elif ("gqa" in cond or "num_heads" in cond) and "impl_ptr" not in cond:
            raise ValueError(f"{F_ASM_MLA}:{line}: head check {cond!r} not understood")
    if kv_line is None:
        raise ValueError(f"{F_ASM_MLA}: mla_decode_stage1_asm_fwd lacks the num_kv_heads check")
    branch_line = line_of(text, off + re.search(r"gqa_ratio\s*==", body).start())
    names = re.findall(r'"/mla/(\w+)\.co"', body)
    ev = (f"{F_ASM_MLA}:{kv_line} mla_decode_stage1_asm_fwd TORCH_CHECK(num_kv_heads == 1)",
          f"{F_ASM_MLA}:{branch_line} mla_decode_stage1_asm_fwd kernel branches on gqa_ratio == "
          f"{' / '.join(map(str, sorted(branches)))}; otherwise TORCH_CHECK(impl_ptr != nullptr) fails")
    return branches, names, ev


def _mla_decode_rules(release: Release) -> list[HeadRule]:
    branches, names, ev = _decode_parts(release)
    mla_py = release.read(F_MLA_PY)
    off, src = py_function(mla_py, "get_meta_param", F_MLA_PY)
    m = re.search(r"get_mgc\s*=\s*\{([^}]*)\}", src)
    a = re.search(r"assert\s+nhead\s+in\s+get_mgc", src)
    if not (m and a):
        raise ValueError(f"{F_MLA_PY}: get_meta_param's get_mgc table / assert not found (layout changed)")
    mgc = ints(r"(\d+)\s*:", m.group(1))
    ev = ev + (f"{F_MLA_PY}:{line_of(mla_py, off + a.start())} get_meta_param: assert nhead in "
               f"get_mgc (keys {sorted(mgc)})",)
    rules = []
    for arch in ARCHS:
        present = _kernel_files(release, arch, [n for n in names if not is_persistent_kernel(n)])
        built = frozenset(h for h in map(kernel_heads, present) if h is not None)
        acc = built & branches & mgc
        rules.append(HeadRule(
            "mla_decode_asm", arch, bool(acc), acc,
            f"q heads per rank (1 KV head) in {sorted(acc)}: C++ branches {sorted(branches)}, "
            f"Python get_mgc {sorted(mgc)}, kernels built for {sorted(built)}",
            ev + tuple(f"{hsa_mla(arch)}/{n}.co (heads {kernel_heads(n)})" for n in present)))
    return rules


def _mla_decode_ps_rules(release: Release) -> list[HeadRule]:
    branches, names, ev = _decode_parts(release)
    mla_py = release.read(F_MLA_PY)
    off, src = py_function(mla_py, "mla_decode_fwd", F_MLA_PY)
    m = re.search(r"if\s+(nhead\s*==[^\n]*):\s*\n(?:\s*#[^\n]*\n)*\s*pass\s*\n"
                  r"\s*elif\s+nhead\s+in\s+range\(\s*(\d+)\s*,\s*(\d+)\s*(?:\+\s*(\d+))?\s*,\s*(\d+)\s*\)"
                  r"([^\n]*):", src)
    if not m:
        raise ValueError(f"{F_MLA_PY}: mla_decode_fwd's persistent head dispatch not found (layout changed)")
    py_native = ints(r"nhead\s*==\s*(\d+)", m.group(1))
    lo, hi, plus, step = int(m.group(2)), int(m.group(3)), int(m.group(4) or 0), int(m.group(5))
    fold_range = frozenset(range(lo, hi + plus, step))
    qlen = re.search(r"max_seqlen_q\s*==\s*(\d+)", m.group(6))
    target = re.search(r"\bnhead\s*=\s*(\d+)\b", src[m.end(): m.end() + 600])
    if not target:
        raise ValueError(f"{F_MLA_PY}: mla_decode_fwd fold target (nhead = N) not found")
    fold_to = int(target.group(1))
    py_line = line_of(mla_py, off + m.start())
    ev = ev + (f"{F_MLA_PY}:{py_line} mla_decode_fwd persistent: native `{' '.join(m.group(1).split())}`; "
               f"nhead in range({lo}, {hi}{' + ' + str(plus) if plus else ''}, {step}){' with max_seqlen_q == ' + qlen.group(1) if qlen else ''} "
               f"folded to nhead = {fold_to}",)
    # persistent metadata (C++): fold rule and the check on what is left
    meta_ok = None
    for f in (F_META_V11, F_META_V12):
        raw = release.read(f)
        text = blank_c_comments(raw)
        fm = re.search(r"\(num_heads\s*%\s*(\d+)\s*==\s*0\)\s*&&\s*\(num_heads\s*<\s*(\d+)\)", text)
        cks = [(c, ln) for c, ln in checks(text, 0, text) if "num_heads" in c]
        if not fm or not cks:
            raise ValueError(f"{f}: persistent-metadata head fold / check not found (layout changed)")
        mod, upper = int(fm.group(1)), int(fm.group(2))
        native_meta = ints(r"num_heads\s*==\s*(\d+)", cks[0][0])
        ok = {n for n in range(1, 1025) if n in native_meta or (n % mod == 0 and n < upper)}
        meta_ok = ok if meta_ok is None else meta_ok & ok
        ev = ev + (f"{f}:{line_of(text, fm.start())} fold when num_heads % {mod} == 0 && num_heads < {upper}; "
                   f"{f}:{cks[0][1]} TORCH_CHECK({cks[0][0]})",)
    attn = release.read(F_ATTN_PY)
    ioff, isrc = py_function(attn, "get_mla_metadata_info_v1", F_ATTN_PY)
    im = re.search(r"assert\s+num_head_qo\s*%\s*(\d+)\s*==\s*0", isrc)
    info_mod = int(im.group(1)) if im else 1
    if im:
        ev = ev + (f"{F_ATTN_PY}:{line_of(attn, ioff + im.start())} get_mla_metadata_info_v1: "
                   f"assert num_head_qo % {info_mod} == 0",)
    rules = []
    for arch in ARCHS:
        present = _kernel_files(release, arch, [n for n in names if is_persistent_kernel(n)])
        built = frozenset(h for h in map(kernel_heads, present) if h is not None)
        native = built & branches & py_native
        folded = frozenset(n for n in fold_range if fold_to in native)
        acc = frozenset(n for n in (native | folded) if n in meta_ok and n % info_mod == 0)
        rules.append(HeadRule(
            "mla_decode_asm_ps", arch, bool(acc), acc,
            f"q heads per rank (1 KV head) in {sorted(acc)}: native {sorted(native)} "
            f"(persistent kernels built for {sorted(built)}), others folded onto the {fold_to}-head "
            f"kernel{' only when max_seqlen_q == ' + qlen.group(1) if qlen else ''}; metadata accepts "
            f"multiples of its fold modulus below its bound",
            ev + tuple(f"{hsa_mla(arch)}/{n}.co (heads {kernel_heads(n)})" for n in present)))
    return rules


def reduce_cases(release: Release) -> dict[int, frozenset[int]]:
    """mla_reduce_v1's compiled (v head dim → head counts) cases from reduce.cu's router macro."""
    raw = release.read(F_REDUCE)
    text = blank_c_comments(raw).replace("\\\n", " \n")
    pairs = re.findall(r"MLA_(?:MERGE|REDUCE)_CASE_(?:IF|EF)\(\s*NUM_HEAD\s*,\s*(\d+)\s*,\s*HEAD_DIM\s*,\s*(\d+)", text)
    if not pairs:
        raise ValueError(f"{F_REDUCE}: no MLA_*_CASE_(IF|EF)(NUM_HEAD, n, HEAD_DIM, d, ...) cases found")
    out: dict[int, set[int]] = {}
    for h, d in pairs:
        out.setdefault(int(d), set()).add(int(h))
    return {d: frozenset(v) for d, v in sorted(out.items())}


def _reduce_rules(release: Release) -> list[HeadRule]:
    raw = release.read(F_REDUCE)
    text = blank_c_comments(raw)
    cases = reduce_cases(release)
    router = re.search(r"#define\s+(MLA_\w*ROUTER)\b", text)
    err = re.search(r'doesn\'t support the specified settings', text)
    ev = [f"{F_REDUCE}:{line_of(text, router.start()) if router else '?'} "
          f"{router.group(1) if router else 'router'} cases (heads, v head dim): "
          + ", ".join(f"dv{d}: {sorted(h)}" for d, h in cases.items())]
    if err:
        ev.append(f"{F_REDUCE}:{line_of(text, err.start())} otherwise TORCH_CHECK(false, "
                  f"\"kn_mla_reduce_v1 doesn't support the specified settings\")")
    rules = []
    for fam, dv in (("mla_reduce_v1_dv128", 128), ("mla_reduce_v1_dv512", 512)):
        acc = cases.get(dv, frozenset())
        for arch in ARCHS:  # HIP source, compiled at first use for the arch at hand
            rules.append(HeadRule(fam, arch, bool(acc), acc,
                                  f"heads per rank in {sorted(acc)} at v head dim {dv} "
                                  f"(HIP source, JIT-compiled for {arch})", tuple(ev)))
    return rules


def _fmha_rules(release: Release, qk_head_dim: int, v_head_dim: int) -> list[HeadRule]:
    mha = release.read(F_MHA_PY)
    off, src = py_function(mha, "_flash_attn_varlen_forward", F_MHA_PY)
    g = re.search(r"def can_impl_fmha_v3_fwd\(\):\n(.*?)\n\s*return ret", src, re.S)
    if not g:
        raise ValueError(f"{F_MHA_PY}: _flash_attn_varlen_forward.can_impl_fmha_v3_fwd not found")
    gate = g.group(1)
    gline = line_of(mha, off + g.start())
    head_conds = [" ".join(ln.split()) for ln in gate.splitlines() if "nhead" in ln]
    for c in head_conds:
        if not re.search(r"nhead_q\s*%\s*nhead_k\s*==\s*0", c):
            raise ValueError(f"{F_MHA_PY}: can_impl_fmha_v3_fwd head condition {c!r} not understood")
    if not head_conds:
        raise ValueError(f"{F_MHA_PY}: can_impl_fmha_v3_fwd has no nhead_q % nhead_k check (layout changed)")
    v_ok = ints(r"hdim_v\s*==\s*(\d+)", gate)
    gated = {(a, int(d)) for a, d in re.findall(r'get_gfx\(\)\s*==\s*"(\w+)"\s*and\s*hdim_q\s*==\s*(\d+)', gate)}
    q_any = ints(r"hdim_q\s*==\s*(\d+)", gate) - {d for _, d in gated}
    ev = (f"{F_MHA_PY}:{gline} can_impl_fmha_v3_fwd: {'; '.join(head_conds)}; hdim_v in {sorted(v_ok)}; "
          f"hdim_q in {sorted(q_any)} on any arch, "
          + ", ".join(f"{d} on {a}" for a, d in sorted(gated)) + "; else mha_varlen_fwd (CK)",)
    stem = f"fwd_hd{qk_head_dim}_hd{v_head_dim}_bf16" if qk_head_dim != v_head_dim else f"fwd_hd{qk_head_dim}_bf16"
    rules = []
    for arch in ARCHS:
        d = release.path(hsa_fmha(arch))
        files = sorted(str(p.relative_to(release.folder)) for p in d.rglob(f"{stem}*.co"))
        gate_ok = v_head_dim in v_ok and (qk_head_dim in q_any or (arch, qk_head_dim) in gated)
        tune = None
        cg = d / "codegen.py"
        if cg.is_file():
            t = re.search(r"nhead_q\s*%\s*(\d+)\s*!=\s*0", cg.read_text(encoding="utf-8", errors="replace"))
            tune = int(t.group(1)) if t else None
        ok = gate_ok and bool(files)
        why = ("any head count (MHA form: nhead_q % nhead_k == 0 always holds)" if ok else
               f"not used for qk/v head dims {qk_head_dim}/{v_head_dim} on {arch}: "
               f"{'no ' + stem + '*.co kernel' if not files else 'Python gate refuses the head dims'}; "
               f"flash_attn_varlen_func falls back to CK mha_varlen_fwd")
        if ok and tune:
            why += (f"; causal launches with heads not a multiple of {tune} use a lower tuning "
                    f"option ({hsa_fmha(arch)}/codegen.py)")
        rules.append(HeadRule("fmha_v3_fwd", arch, ok, None if ok else frozenset(), why,
                              ev + tuple(files[:4]) + ((f"... {len(files)} files",) if len(files) > 4 else ())))
    return rules


def _ck_rules(release: Release, qk_head_dim: int, v_head_dim: int) -> list[HeadRule]:
    raw = release.read(F_CK_VARLEN)
    text = blank_c_comments(raw)
    ev, any_heads, dims_ok = [], False, True
    for cond, line in checks(text, 0, text):
        if re.search(r"num_heads\s*%\s*num_heads_k\s*==\s*0", cond):
            any_heads = True
            ev.append(f"{F_CK_VARLEN}:{line} TORCH_CHECK({cond})")
        elif "num_heads" in cond:
            raise ValueError(f"{F_CK_VARLEN}:{line}: head check {cond!r} not understood")
        elif re.search(r"head_size_[qv]\s*(<=|%)", cond):
            which = qk_head_dim if "head_size_q" in cond else v_head_dim
            le = re.search(r"<=\s*(\d+)", cond)
            md = re.search(r"%\s*(\d+)\s*==\s*0", cond)
            if (le and which > int(le.group(1))) or (md and which % int(md.group(1))):
                dims_ok = False
            ev.append(f"{F_CK_VARLEN}:{line} TORCH_CHECK({cond})")
    if not any_heads:
        raise ValueError(f"{F_CK_VARLEN}: no num_heads % num_heads_k check found (layout changed)")
    ok = dims_ok
    return [HeadRule("mha_fwd_ck", arch, ok, None if ok else frozenset(),
                     ("any head count (MHA form: num_heads % num_heads_k == 0 always holds); "
                      f"CK kernels JIT-compiled from aiter_meta/3rdparty/composable_kernel for {arch}")
                     if ok else f"head dims {qk_head_dim}/{v_head_dim} refused by the CK checks",
                     tuple(ev)) for arch in ARCHS]



def derive_all(release: Release, qk_head_dim: int, v_head_dim: int) -> tuple[HeadRule, ...]:
    """Every family × arch rule of ``release``, sorted by :data:`FAMILIES` then arch."""
    rules = (_mla_prefill_rules(release) + _mla_prefill_ps_rules(release) + _mla_decode_rules(release)
             + _mla_decode_ps_rules(release) + _reduce_rules(release)
             + _fmha_rules(release, qk_head_dim, v_head_dim) + _ck_rules(release, qk_head_dim, v_head_dim))
    order = {f: i for i, f in enumerate(FAMILIES)}
    return tuple(sorted(rules, key=lambda r: (order[r.family], r.arch)))

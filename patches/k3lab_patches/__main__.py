"""``python -m k3lab_patches <status | verify | serve> …``: the operator's commands.

* ``status [--version X]``: the installed sglang's version (or sglang ``X``, offline: no
  sglang needed, e.g. on the operator's laptop before patching an image) and, per patch, ``needed`` / ``needed,
  untested`` (``--force`` required) / ``fixed in X`` / ``unknown`` (:func:`k3lab_patches.status`),
  with the release that fixed it upstream; whether the release can run Kimi K3 and which attention
  backend it picks for it on ROCm (:func:`k3lab_patches.release_facts`). ``status --all``: every
  measured release in one table (:func:`release_table`).
* ``verify [--device D] [--vocab N] [--force]``: sglang's speculative verifier as installed,
  then patched, against a reference (:mod:`k3lab_patches.verify`).
* ``serve [--force] [--dry-run] -- <sglang launch_server args>``: apply, then run sglang's
  server in this process (:mod:`k3lab_patches.serve`).
"""

from __future__ import annotations

import sys
import textwrap

#: the version an article-era Kimi K3 branch image reports (data/public_measurements.yaml's ROCm runs): a
#: development build of 0.5.15.post1, which sorts before 0.5.16
BRANCH_EXAMPLE = "0.5.15.post1.dev20260723+g6c9fd0adc5"
USAGE = "usage: python -m k3lab_patches {status [--version X | --all] | verify [--device D] [--vocab N] [--force] | serve [--force] [--dry-run] -- <sglang args>}"


def help_text() -> str:
    """The module doc as an operator reads it: reST markup (````x````, ``:func:`x```) as plain text, then
    the usage line."""
    import re

    text = re.sub(r":(?:func|mod|class):`([^`]+)`", r"\1", __doc__.strip()).replace("``", "")
    return text + "\n\n" + USAGE


def status_line(p, version: str) -> str:
    """One patch's status with the release that fixed it upstream (the way out without a patch)."""
    from . import newest_measured_fixed, status, upstream_fix

    s = status(p, version)
    if s.startswith("needed"):
        fix = upstream_fix(p, version)
        way = (f"; fixed upstream in sglang {fix}: upgrading removes the need" if fix else "; no measured release fixes it")
        return f"{s}{' (apply with --force)' if s == 'needed, untested' else ''}{way} ({p.fixed_by})"
    if s.startswith("fixed in"):
        says = getattr(p, "fixed_says", None)   # a patch that can say it in this release's own terms
        return f"not needed: {says(version)}" if says else f"not needed: {s} ({p.fixed_by})"
    newest = newest_measured_fixed(p, version)
    if newest:  # a release after every measured one, the newest of which has the fix: no nudge to --force
        return (f"{s}: not in the measured matrix, but later than sglang {newest}, the newest measured, which has the "
                f"fix: most likely fixed here too; only if this release still shows the bug, --force applies the patch "
                f"where the code it replaces is there as it expects ({p.fixed_by})")
    fix = upstream_fix(p, version)
    way = f"; sglang {fix}, measured, has the fix: upgrading removes the need" if fix else ""
    return (f"{s}: not in the measured matrix; nothing is inferred from the version: the patch applies only with "
            f"--force, and then only if the code it replaces is there as it expects{way} ({p.fixed_by})")


def release_table() -> list[str]:
    """Every measured release in one table, oldest first, from the shipped matrix (what ``status
    --all`` prints; consecutive releases with the same answers share a row): whether it runs Kimi K3,
    the top-k crash on HIP, what AITER's prefill does with 12 heads per rank, and which k3lab patch it
    wants; then the K3 branch builds the matrix does not hold, and the flags every release needs for
    AITER's prefill on ROCm."""
    from . import _patches, status
    from .aiter_head_pad import AiterHeadPadPatch
    from .releases import load, version_key

    doc = load()
    ps = {p.name: p for p in _patches()}
    pad_from, pad_pr = AiterHeadPadPatch.UPSTREAM["prefill"]
    acc_from, acc_pr = AiterHeadPadPatch.UPSTREAM["accepts"]
    crash_fix = next((r["sglang"] for r in doc["rows"] if not r["topk_renorm"]), None)
    rows = []
    for r in doc["rows"]:
        v = r["sglang"]
        crash = (f"crashes{' (' + r['topk_crash'] + ')' if r.get('topk_crash') else ''}" if r["topk_renorm"] else
                 "fixed" + (" (PR #32641)" if v == crash_fix else ""))
        if r["aiter_head_pad"]:
            heads = "refused"
        elif version_key(v) >= version_key(pad_from):
            heads = "sglang pads to 16, fp8" + (f" (PR #{pad_pr}, likely)" if v == pad_from else "")
        else:
            heads = "accepted, unpadded" + (f" (PR #{acc_pr})" if v == acc_from else "")
        wanted = [n for n, p in ps.items() if status(p, v).startswith("needed")]
        untested = any(status(ps[n], v) == "needed, untested" for n in wanted)
        patch = ("none" + (": recommended, load-test" if version_key(v) >= version_key(pad_from) else "") if not wanted else
                 # (newcomer 39: "no patch at all: 0.5.19" while 0.5.17-0.5.18 run K3 unpatched on Triton attention)
                 ("both" if len(wanted) == 2 else "head pad, for aiter" if wanted == ["aiter_head_pad"] else "top-k renorm")
                 # (newcomer 19: "untested here" beside operators.md's "the matrix ran it forced, on CPU")
                 + (f", --force (written for {', '.join(sorted({k for n in wanted for k in ps[n].known_versions}))})"
                    if untested else " (tested on its code)"))
        row = [v, "yes" if r["kimi_k3_module"] else "no", crash, heads, patch]
        plain = [c.split(" (PR #")[0] for c in row[1:]]
        if rows and [c.split(" (PR #")[0] for c in rows[-1][1:]] == plain:  # the same answers: one row, a range
            rows[-1][0] = f"{rows[-1][0].split('–')[0]}–{v}"
        else:
            rows.append(row)
    # the article's images, emulated, not measured (newcomers 49-50: no row for the NameError the question names):
    # first, as they sort before every measured release
    img = doc.get("k3_images")
    if img:
        rows.insert(0, [f"K3 images ({img['reports']})", "yes", f"{img['raises']} (emulated)", "refused",
                        "both, --force (status: unknown; untested)"])
    heads = ["sglang", "runs K3", "top-k crash on HIP", "12 heads, AITER prefill", "k3lab patch"]
    w = [max(len(x[i]) for x in rows + [heads]) for i in range(len(heads))]
    line = lambda cells: "  ".join(c.ljust(n) for c, n in zip(cells, w)).rstrip()  # noqa: E731
    # (newcomer 45: a branch build on a measured release, e.g. 0.5.17.dev0, is judged by that release's row)
    # (newcomer 47: "older than 0.5.16" beside the README's "rebuilt on 0.5.16's code": the images' own version)
    first = next(r[0] for r in rows if r[0][:1].isdigit()).split("–")[0]
    # (newcomer 53: "PR #32621 state" beside the fix's PR #32641 read as one number): the state in words
    notes = ((f"K3 images: the article's branch builds, outside the matrix (the row: the study's emulation of their code, "
              f"{img['state'].split(' (')[-1].rstrip(')')}); status --version says 'unknown' for them; serve --force "
              "patches where the code is as expected") if img else
             f"K3 branch builds older than {first}: not in the matrix; status --version X says 'unknown'; serve --force "
             "applies both patches where their code is as expected",
             "every release: on ROCm sglang picks triton attention for K3's 12 heads per rank; AITER's prefill needs "
             "--attention-backend aiter (and the MI35x recipe's SGLANG_AITER_K3_OPT=1 for a 1M-token request)",
             # (newcomer 47: "none: recommended" beside the open PR fencing the padded kernel: what "load-test" means)
             f"from {pad_from}: {AiterHeadPadPatch.load_test()}")
    return [line(heads), line(["-" * n for n in w]), *map(line, rows),
            *(x for n in notes for x in textwrap.wrap(n, 118, subsequent_indent="  ", break_on_hyphens=False))]


def status_main(argv) -> int:
    """Print each patch's status for the installed sglang (or ``--version X``, without sglang), the
    release that fixed each upstream, and what the release means for Kimi K3 → 0 (2 on a usage
    error, a version that is not one, or no sglang and no ``--version``)."""
    from . import _patches, force_note, newest_measured_fixed, release_facts, sglang_version, status
    from .oneline import OneLineParser
    from .releases import parse

    ap = OneLineParser(prog="k3lab_patches status", description="Each patch's status for the installed sglang "
                       "(or --version X, offline), the release that fixed it upstream, and what the release means "
                       "for Kimi K3.")
    ap.add_argument("--version", help="an sglang version (PEP 440), read from the shipped matrix")
    ap.add_argument("--all", action="store_true", help="every measured release in one table (offline)")
    args = ap.parse_args(argv)
    if args.all:
        if args.version is not None:
            ap.error("--all lists every release: drop --version")
        print("\n".join(release_table()))
        return 0
    if args.version is not None:
        version = args.version.strip()
        try:
            parse(version)
        except ValueError:
            ap.error(f"--version {args.version[:40]!r} is not a PEP 440 version (e.g. 0.5.17, {BRANCH_EXAMPLE})")
    else:
        try:
            version = sglang_version()
        except RuntimeError:
            ap.error("sglang is not installed in this environment; pass --version X (what the image's "
                     "`pip show sglang` says) to read the release matrix for sglang X without it")
    print(f"sglang {version}" + (" (--version: not the installed sglang)" if args.version is not None else ""))
    for p in _patches():
        print(f"  {p.name}: {status_line(p, version)}")
    for fact in release_facts(version):
        print(f"  {fact}")
    # the note on --force matters only where a patch is still wanted; a release that needs none says so
    wanted = [p for p in _patches() if not status(p, version).startswith("fixed in")]
    if not wanted:
        print("note: this release needs no k3lab patch")
    elif all(status(p, version) == "unknown" and newest_measured_fixed(p, version) for p in wanted):
        print("note: a release after every measured one, all of whose fixes it most likely keeps: no k3lab patch is "
              "likely needed (`verify` on the image tells)")
    else:
        print(f"note: {force_note()}")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(help_text())
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "status":
        return status_main(rest)
    if cmd == "verify":
        from .verify import main as verify_main

        return verify_main(rest)
    if cmd == "serve":
        from .serve import main as serve_main

        return serve_main(rest)
    print(f"k3lab_patches: unknown command {cmd!r}\n{USAGE}", file=sys.stderr)
    return 2


def _run() -> int:
    """:func:`main`, quiet when the reader of its output went away (``| head``: Python's documented
    recipe, stdout pointed at devnull so the interpreter's last flush does not fail either)."""
    import os

    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(_run())

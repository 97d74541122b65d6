"""Screenshots of ``results/report.html`` in a real browser (headless Chromium), to look at a
report change before committing it.

``python -m k3lab.report_screenshots [REPORT] [--out build/report-screenshots]`` (``make
screenshots``) renders the page twice at 1280 px wide — as a reader first sees it (every
collapsible section closed) and with every drop-down open (sections, folded full tables, the
decision box's details, code cells) — into slices ``<out>/closed-NN.png`` and ``<out>/open-NN.png``.

Each slice is its own capture: a copy of the page shifted up by the slice's offset, shot in a
window one slice high. A single full-page shot does not work for a long page: Chromium paints at
most about 16,384 px of one surface and leaves the rest blank while reporting success. A slice
that comes out one flat colour is an error (exit status 1, naming the slice), never a silent pass.
It needs Chromium (``make browser`` installs Debian's ``chromium``; or ``CHROMIUM=/path``);
without it, one line and exit status 2. Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .paths import REPO_ROOT, results_root

WIDTH_PX = 1280
SLICE_PX = 1100
#: the flags the study runs Chromium with (as root: --no-sandbox); no network, no profile state
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
_MEASURE = ('<script>document.body.setAttribute("data-page-height", '
            "Math.ceil(document.documentElement.scrollHeight))</script>")


def find_chromium() -> str | None:
    """``$CHROMIUM``, else ``chromium`` on PATH, else None."""
    exe = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    return exe if exe and Path(exe).exists() else None


def _chromium(exe: str, args: list[str], profile: Path, timeout_s: int = 180) -> str:
    r = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                       timeout=timeout_s)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"chromium exited {r.returncode}: {tail}")
    return r.stdout


def page_height(exe: str, page: Path, profile: Path) -> int:
    """The page's height in CSS px at :data:`WIDTH_PX` (a copy with a measuring script; the
    report itself has none)."""
    probe = page.with_name(page.stem + ".measure.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    dom = _chromium(exe, [f"--window-size={WIDTH_PX},1000", "--dump-dom", probe.as_uri()], profile)
    m = re.search(r'data-page-height="(\d+)"', dom)
    if not m:
        raise RuntimeError("chromium rendered the page but reported no height")
    return int(m.group(1))


#: a slice whose pixels all lie within this many grey levels of each other is blank
BLANK_SPREAD = 2


class BlankSlice(RuntimeError):
    """A captured slice came out one flat colour."""


def _segment(page_text: str, top: int) -> str:
    """The page shifted up by ``top`` CSS px, without scrollbars: what a window one slice high
    shows of it from ``top`` down."""
    style = (f"<style>html,body{{overflow:hidden !important}} body{{position:relative !important;"
             f"top:-{top}px !important}}</style>")
    return page_text.replace("</head>", style + "</head>", 1)


def is_blank(png: Path) -> bool:
    """Every pixel of ``png`` within :data:`BLANK_SPREAD` grey levels of the others."""
    from PIL import Image

    with Image.open(png) as im:
        lo, hi = im.convert("L").getextrema()
    return hi - lo <= BLANK_SPREAD


def shoot(exe: str, page: Path, prefix: Path, slice_px: int = SLICE_PX) -> list[Path]:
    """Slices ``<prefix>-NN.png`` of ``page``, ``slice_px`` px each (the last one the page's rest),
    each captured on its own (module docstring); :class:`BlankSlice` naming the first blank one."""
    with tempfile.TemporaryDirectory(prefix="k3lab-chromium-") as tmp:
        profile = Path(tmp) / "profile"
        h = page_height(exe, page, profile)
        text = page.read_text(encoding="utf-8")
        out = []
        for k, top in enumerate(range(0, h, slice_px)):
            seg = page.with_name(f"{page.stem}.{k:02d}.html")
            seg.write_text(_segment(text, top), encoding="utf-8")
            path = prefix.with_name(f"{prefix.name}-{k:02d}.png")
            high = min(slice_px, h - top)
            _chromium(exe, [f"--window-size={WIDTH_PX},{high}", f"--screenshot={path}", seg.as_uri()], profile)
            if not path.exists():
                raise RuntimeError(f"chromium wrote no screenshot for slice {k:02d}")
            if is_blank(path) and high > 40:  # a last sliver of bottom margin may be blank
                raise BlankSlice(f"slice {path.name} ({top:,}-{top + high:,} px of {h:,}) came out blank")
            out.append(path)
    return out


#: a ``<details`` start tag that is not open yet
_CLOSED_DETAILS = re.compile(r"<details(?![^>]*\bopen\b)(?=[\s>])", re.I)


def _opened(page: str) -> str:
    """The page with every ``<details>`` open: sections, folded full tables, the decision box's
    drop-downs and the notebooks' code cells."""
    return _CLOSED_DETAILS.sub("<details open", page)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lab.report_screenshots",
                                 description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("report", nargs="?", type=Path, default=None, help="the page (default results/report.html)")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "report-screenshots",
                    help="folder for the PNGs (default build/report-screenshots; its old PNGs are removed)")
    ap.add_argument("--slice-px", type=int, default=SLICE_PX, help=f"height of one slice in px (default {SLICE_PX})")
    a = ap.parse_args(argv)
    report = a.report or results_root() / "report.html"
    exe = find_chromium()
    if exe is None:
        print("k3lab screenshots: chromium not found (`make browser` installs it, or set CHROMIUM=/path/to/it)",
              file=sys.stderr)
        return 2
    if not report.is_file():
        print(f"k3lab screenshots: {report} not found; run `make reproduce` first", file=sys.stderr)
        return 2
    if a.slice_px < 200:
        print(f"k3lab screenshots: --slice-px {a.slice_px} is below 200 px", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    for old in a.out.glob("*.png"):
        old.unlink()
    text = report.read_text(encoding="utf-8")
    written = []
    try:
        with tempfile.TemporaryDirectory(prefix="k3lab-shots-") as tmp:
            for mode, page_text in (("closed", text), ("open", _opened(text))):
                page = Path(tmp) / f"{mode}.html"
                page.write_text(page_text, encoding="utf-8")
                written += shoot(exe, page, a.out / mode, a.slice_px)
    except (RuntimeError, subprocess.TimeoutExpired) as e:  # BlankSlice included
        print(f"k3lab screenshots: {e}", file=sys.stderr)
        return 1
    for mode in ("closed", "open"):
        n = sum(p.name.startswith(mode) for p in written)
        print(f"{mode}: {n} slice(s) of {WIDTH_PX}×{a.slice_px} px → {a.out}/{mode}-NN.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Reading AITER's C/C++ and Python source text, and its kernel file names, without importing it.

Helpers the rule derivation (:mod:`k3lab.aiter_release.families`) builds on: blank C/C++
comments keeping offsets, find a function's body, list its ``TORCH_CHECK`` conditions with
line numbers, cut a top-level Python function, and read the head count a kernel file name
states.
"""

from __future__ import annotations

import re

_C_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)


def blank_c_comments(text: str) -> str:
    """Replace C/C++ comments by spaces (newlines kept) so offsets and line numbers survive."""
    def sub(m):
        s = m.group(0)
        return s if s.startswith('"') else re.sub(r"[^\n]", " ", s)
    return _C_TOKENS.sub(sub, text)


def line_of(text: str, pos: int) -> int:
    """The 1-based line number of offset ``pos`` in ``text``."""
    return text.count("\n", 0, pos) + 1


def _match_close(text: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket closing the one at ``i`` (strings skipped)."""
    depth, j, n = 0, i, len(text)
    while j < n:
        c = text[j]
        if c == '"':
            j += 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
        elif c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise ValueError(f"unbalanced {open_ch}{close_ch} from offset {i}")


def c_function(text: str, name: str, file: str) -> tuple[int, str]:
    """(offset, body) of the C++ function ``name`` in comment-blanked ``text``."""
    m = re.search(rf"\bvoid\s+{re.escape(name)}\s*\(", text)
    if not m:
        raise ValueError(f"{file}: function {name}() not found (release layout not understood)")
    close = _match_close(text, m.end() - 1, "(", ")")
    brace = text.index("{", close)
    end = _match_close(text, brace, "{", "}")
    return brace, text[brace:end + 1]


def checks(body: str, offset: int, text: str) -> list[tuple[str, int]]:
    """(condition, line) of every TORCH_CHECK / AITER_CHECK in ``body``: the first argument."""
    out = []
    for m in re.finditer(r"\b(?:TORCH|AITER)_CHECK\s*\(", body):
        j, depth = m.end(), 1
        start = j
        while j < len(body):
            c = body[j]
            if c == '"':
                j = body.index('"', j + 1)
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    break
            elif c == "," and depth == 1:
                break
            j += 1
        cond = " ".join(body[start:j].split())
        out.append((cond, line_of(text, offset + m.start())))
    return out


def py_function(text: str, name: str, file: str) -> tuple[int, str]:
    """(offset, source) of the top-level Python function ``name``."""
    m = re.search(rf"^def {re.escape(name)}\(", text, re.M)
    if not m:
        raise ValueError(f"{file}: def {name}() not found (release layout not understood)")
    nxt = re.compile(r"\n(?=[^\s)#])").search(text, m.end())
    return m.start(), text[m.start(): nxt.start() if nxt else len(text)]


def ints(pattern: str, s: str) -> frozenset[int]:
    """The integers a one-group ``pattern`` captures in ``s``."""
    return frozenset(int(x) for x in re.findall(pattern, s))


#: Head-count tokens in AITER MLA kernel file names, most specific first
#: (``mla_a8w8_qh16_qseqlen1_gqaratio16``, ``mla_pfl_bf16_a16w16_causal_subQ16_mqa16``).
_NAME_HEAD_KEYS = ("gqaratio", "mqa", "qh")


def kernel_heads(name: str) -> int | None:
    """q heads per KV head a kernel file name says it was built for (None if it says none).

    ``subQ`` is a tile size, not a head count, and is ignored.
    """
    for key in _NAME_HEAD_KEYS:
        m = re.search(rf"(?:^|_){key}(\d+)(?=_|$|\.)", name)
        if m:
            return int(m.group(1))
    return None


def is_persistent_kernel(name: str) -> bool:
    """Whether a kernel file name is a persistent-mode (``_ps``) kernel."""
    return re.search(r"_ps(?=_|$)", name) is not None

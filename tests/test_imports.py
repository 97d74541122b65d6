"""No import circles inside ``k3lab/`` (issue 23), and the patches an operator installs
(``patches/k3lab_patches``, the k3lab-patches distribution) import nothing of the study.

Every ``import`` / ``from … import`` statement of every module counts, wherever it stands —
top level, inside a function (a "lazy" import is still a dependency that closes a circle when
it runs), under ``if TYPE_CHECKING:``. ``from pkg import name`` depends on ``pkg.name`` when
that is a module, otherwise on ``pkg`` itself (its ``__init__`` defines the name). A package
depending on its own submodules is the usual re-export; a submodule that imports a name back
from its package's ``__init__`` closes a circle, and is reported.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "k3lab"
PATCHES = Path(__file__).resolve().parents[1] / "patches" / "k3lab_patches"


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


MODULES = _modules()


def _known(name: str) -> str | None:
    """The longest k3lab module that ``name`` (a dotted path) is or lies in."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(mod: str, path: Path) -> set[str]:
    is_pkg = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                pkg = ".".join(base + ([node.module] if node.module else []))
            else:
                pkg = node.module or ""
            targets = [f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in MODULES else pkg for a in node.names]
        else:
            continue
        found |= {k for k in map(_known, targets) if k and k.startswith("k3lab")}
    found.discard(mod)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(root):
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_what_it_should():
    """The scanner itself: a few edges known from the source."""
    assert "k3lab.data" in GRAPH["k3lab.specs"]
    assert "k3lab.schemas.measured" in GRAPH["k3lab.data"]
    assert "k3lab.release_status" in GRAPH["k3lab.findings.f2_topk"]
    # a lazy import inside a function counts (pipeline builds the report only when asked)
    assert "k3lab.report" in GRAPH["k3lab.pipeline"]
    # and the finder finds a circle when there is one
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles_inside_k3lab():
    circles = _circles(GRAPH)
    assert circles == [], "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def _imported_names(path: Path) -> set[str]:
    """Every absolute module name an ``import`` / ``from … import`` of ``path`` names."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.add(node.module or "")
    return out


def test_the_patches_import_nothing_of_the_study():
    """The study depends on k3lab-patches, never the other way round: an operator installs it
    without k3lab (the release matrix travels as its release_verdicts.json)."""
    files = sorted(PATCHES.glob("*.py"))
    assert {p.stem for p in files} >= {"__init__", "topk_renorm", "aiter_head_pad", "plugin", "sampling"}
    for path in files:
        bad = sorted(n for n in _imported_names(path) if n == "k3lab" or n.startswith("k3lab."))
        assert bad == [], f"{path.name} imports {bad}"
    # and the scanner sees an import when there is one
    assert "k3lab_patches" in _imported_names(ROOT / "patches.py")

"""The import graph keeps docs/architecture.md's layering: every import of coordbench
(module level or inside a function) points to the same layer or below, and no two modules
import each other, directly or round a loop. The package face (`coordbench/__init__.py`)
is the top: its lazy attributes (`evaluate`, `load_run`, ...) may import anything."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# bottom to top, as docs/architecture.md draws them; a package on a lower line never imports
# one on a higher line
LAYERS = [
    ("errors", "core"),
    ("runner",),
    ("envs",),
    ("metrics", "llm"),
    ("analyses",),
    ("learn",),
    ("agents", "play"),
    ("suites", "crossplay", "attribution"),
    ("report",),
    ("viewer", "data"),
    ("reproduce", "api"),
    ("commands",),
    ("cli", "__main__", ""),
]
LAYER = {pkg: i for i, names in enumerate(LAYERS) for pkg in names}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in (SRC / "coordbench").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _imports(mods: dict[str, tuple[Path, bool]]) -> list[tuple[str, str, int]]:
    """Return (importer, imported module, line) for every import of a coordbench module."""
    edges = []
    for name, (path, is_pkg) in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods]
                # `from pkg import submodule` imports the submodule, not the package's names
                targets = subs if len(subs) == len(node.names) else [mod, *subs]
            else:
                continue
            for t in targets:
                if not t.startswith("coordbench"):
                    continue
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t != name:
                    edges.append((name, t, node.lineno))
    return edges


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYER[parts[1] if len(parts) > 1 else ""]


def test_every_package_has_a_layer():
    mods = _modules()
    missing = {m.split(".")[1] for m in mods if "." in m and m.split(".")[1] not in LAYER}
    assert not missing, f"add {sorted(missing)} to LAYERS and docs/architecture.md"


def test_imports_point_down():
    mods = _modules()
    up = [f"{a} -> {b} (line {line})" for a, b, line in _imports(mods)
          if _layer(b) > _layer(a)]
    assert not up, "imports against the layering:\n" + "\n".join(sorted(up))


def _cycles(mods: dict[str, tuple[Path, bool]]) -> list[list[str]]:
    """Return the import cycles of `mods` (strongly connected sets of two or more)."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for a, b, _ in _imports(mods):
        graph[a].add(b)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
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
                        cycles.append(sorted(comp))
    return cycles


def test_no_import_cycles():
    cycles = _cycles(_modules())
    assert not cycles, f"import cycles: {cycles}"


def test_the_checker_sees_an_upward_import_and_a_cycle(tmp_path, monkeypatch):
    """The walk is real: a planted upward import and a planted cycle are found."""
    pkg = tmp_path / "coordbench"
    for sub in ("core", "suites"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("def f():\n    from coordbench.suites import b\n")
    (pkg / "suites" / "b.py").write_text("from coordbench.core import a\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    edges = _imports(_modules())
    assert ("coordbench.core.a", "coordbench.suites.b", 2) in edges
    assert [(a, b) for a, b, _ in edges if _layer(b) > _layer(a)] == [
        ("coordbench.core.a", "coordbench.suites.b")]
    assert _cycles(_modules()) == [["coordbench.core.a", "coordbench.suites.b"]]

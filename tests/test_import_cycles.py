"""No import cycle inside a package: each reads top to bottom (issue 20). Every `import`
counts, wherever it stands (module level, inside a function, under TYPE_CHECKING), as in
test_layers: a lazy import only hides a cycle, it does not break it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str, path: Path) -> set[str]:
    """The gpupact modules `name` imports: `from pkg import sub` names the submodule when
    there is one, else the package."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:
                    found.add(sub)
                elif base in MODULES:
                    found.add(base)
    return found - {name}


def cycles(package: str) -> list[list[str]]:
    """The import cycles among the modules of `package`."""
    inside = sorted(m for m in MODULES if m == package or m.startswith(package + "."))
    return circles({m: sorted(_imports(m, MODULES[m]) & set(inside)) for m in inside})


def circles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_finder_sees_cycles_and_edges():
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": ["e"]}
    assert circles(graph) == [["a", "b", "c"]]  # d only points in; a self-import is no circle
    assert circles({"a": ["b"], "b": []}) == []
    # `from gpupact.engine.admission import reasons` names the submodule, not the package
    cycle = MODULES["gpupact.engine.admission.cycle"]
    assert "gpupact.engine.admission.reasons" in _imports("gpupact.engine.admission.cycle", cycle)


@pytest.mark.parametrize(
    "package",
    [
        "gpupact.engine.admission",
        "gpupact.ops",
        "gpupact.twin",
        "gpupact.engine.kai",
        "gpupact.engine.volcano",
    ],
)
def test_package_has_no_import_cycle(package):
    assert cycles(package) == []

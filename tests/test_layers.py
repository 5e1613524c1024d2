"""The layer rule of DESIGN.md, read from the source: imports point downward only, and the core
never reads the wall clock or unseeded randomness (time is a parameter; only the CLI reads it).

Every `import` / `from ... import` counts, wherever it stands (module level, inside a function,
under TYPE_CHECKING): a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "gpupact"

# Foundations every layer may use: errors (kube too) and the document loader (not kube: it
# needs PyYAML, and kube imports the stdlib only).
FOUNDATION = {"errors", "source"}

# What each layer may import besides itself (DESIGN.md, "Layers").
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "source": {"errors"},
    "kube": {"errors"},
    "contract": {"kube"} | FOUNDATION,
    "cluster": {"kube"} | FOUNDATION,
    "engine": {"kube", "cluster"} | FOUNDATION,
    # the twin runs what `compile` writes (contract -> objects -> engine) and serves replicas
    # with `plan`'s model: one source for each, nothing re-derived
    "twin": {"engine", "cluster", "kube", "contract", "compile", "plan"} | FOUNDATION,
    "plan": {"contract", "kube"} | FOUNDATION,
    "compile": {"contract", "kube"} | FOUNDATION,
    # ops reads the contract (classes, pools, models) and the keys compile writes (contract.keys)
    # ops.review reads the ledger's GPU-hours and waits for the monthly review
    # ops.memory sizes a model with plan's memory arithmetic (one rule for plan and diagnose;
    # plan imports only contract and kube, so this adds no cycle)
    "ops": {"engine", "cluster", "contract", "kube", "ledger", "plan"} | FOUNDATION,
    # ledger reads pods with the keys compile writes (contract.keys) and API-server times with
    # the engine's one RFC 3339 reader (engine.preemption.importance)
    "ledger": {"cluster", "kube", "contract", "engine"} | FOUNDATION,
}
EVERYTHING = {"serve", "cli", "__init__", "__main__"}  # the edges, the package root

# Layers that must take the time as a parameter. The CLI reads the clock; the twin owns an
# injected clock but also times its replays (wall seconds as a result), so it is not listed.
NO_CLOCK = ("kube", "contract", "cluster", "engine", "plan", "compile", "ops", "ledger")
CLOCK_CALLS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
}
# Seeded generators are fine when given a seed; module-level random functions never are.
SEEDED_FACTORIES = {"Random", "default_rng", "RandomState", "Generator", "SeedSequence"}


@dataclass(frozen=True)
class ImportEdge:
    module: str  # the importing module, dotted
    target: str  # the imported module, dotted
    line: int


def _module_name(path: Path, root: Path = SRC) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(dotted: str) -> str:
    """`gpupact.engine.gang` -> `engine`; the package itself -> `__init__`."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, root: Path = SRC) -> list[ImportEdge]:
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    edges = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            edges += [ImportEdge(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            edges.append(ImportEdge(module, target, node.lineno))
    return edges


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _all_edges() -> list[ImportEdge]:
    return [edge for path in _sources() for edge in _imports(path)]


def test_the_tree_is_read() -> None:
    layers = {_layer(_module_name(p)) for p in _sources()}
    assert {"kube", "cluster", "engine", "contract", "compile", "ops", "cli"} <= layers
    assert layers - EVERYTHING <= set(ALLOWED), f"a layer the rule does not name: {layers}"


def test_imports_point_downward_only() -> None:
    wrong = []
    for edge in _all_edges():
        if edge.target != "gpupact" and not edge.target.startswith("gpupact."):
            continue
        source, target = _layer(edge.module), _layer(edge.target)
        if source in EVERYTHING or source == target:
            continue
        if target not in ALLOWED[source]:
            wrong.append(f"{edge.module}:{edge.line} imports {edge.target} ({source} -> {target})")
    assert not wrong, "imports against the layer rule:\n" + "\n".join(wrong)


def test_kube_imports_the_standard_library_only() -> None:
    wrong = []
    for edge in _all_edges():
        if _layer(edge.module) != "kube" or edge.target.startswith("gpupact."):
            continue
        top = edge.target.split(".")[0]
        if top != "__future__" and top not in sys.stdlib_module_names:
            wrong.append(f"{edge.module}:{edge.line} imports {edge.target}")
    assert not wrong, "gpupact.kube must need nothing but the stdlib:\n" + "\n".join(wrong)


def _dotted(node: ast.expr) -> tuple[str, ...]:
    """`np.random.default_rng` -> ("np", "random", "default_rng"); () for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return (node.id, *reversed(parts))
    return ()


def _clock_or_chance(call: ast.Call) -> str | None:
    name = _dotted(call.func)
    if len(name) >= 2 and name[-2:] in CLOCK_CALLS:
        return "reads the wall clock"
    if "random" in name[:-1]:  # random.x(...), np.random.x(...), numpy.random.x(...)
        if name[-1] not in SEEDED_FACTORIES:
            return "draws unseeded module-level randomness"
        if not call.args and not call.keywords:
            return "builds a generator without a seed"
    return None


@pytest.mark.parametrize("layer", NO_CLOCK)
def test_core_takes_time_and_chance_as_parameters(layer: str) -> None:
    wrong = []
    for path in sorted((PACKAGE / layer).rglob("*.py")) if (PACKAGE / layer).is_dir() else []:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call) and (why := _clock_or_chance(node)):
                wrong.append(f"{path.relative_to(SRC)}:{node.lineno} {why}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        ("time.time()", True),
        ("datetime.now(UTC)", True),
        ("dt.datetime.utcnow()", True),
        ("random.shuffle(xs)", True),
        ("np.random.rand(3)", True),
        ("np.random.default_rng()", True),
        ("random.Random()", True),
        ("random.Random(seed)", False),
        ("np.random.default_rng(seed)", False),
        ("self.rng.integers(4)", False),
        ("parse_now(text)", False),
    ],
)
def test_the_clock_check_sees_what_it_should(code: str, flagged: bool) -> None:
    call = ast.parse(code, mode="eval").body
    assert isinstance(call, ast.Call)
    assert (_clock_or_chance(call) is not None) is flagged


def test_relative_imports_resolve_to_their_package(tmp_path: Path) -> None:
    pkg = tmp_path / "gpupact" / "engine" / "placement"
    pkg.mkdir(parents=True)
    shape = pkg / "shape.py"
    shape.write_text("from .plugins import labels\nfrom ..gang import PodGroup\n")
    targets = [e.target for e in _imports(shape, tmp_path)]
    assert targets == ["gpupact.engine.placement.plugins", "gpupact.engine.gang"]

"""A corpus of malformed inputs x every command that reads a file (issue 20, "Bad input"):
each case must exit 2 with `error: ` + the file's name (and, for a field, its path) and no
traceback: one line, except where a contract's schema finds several errors in one file
(kubectl-style, every error is listed, each on its own located line).

Shapes are of three sorts: a value put at a typed field (numbers Python cannot hold, NaN and
inf, wrong types), a mapping given keys it cannot take (mixed-type or integer keys, an
unknown field, a duplicate key) and a file that is not a good file (a FIFO, a device, a
directory, NUL bytes, not UTF-8, malformed text, a byte-order mark before an error). Every
case of a command runs in one subprocess (malformed_worker.py) under a timeout: a hang fails
the test instead of holding the suite.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import gpupact
from gpupact.errors import format_path

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(gpupact.__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("malformed_worker.py")
CONTRACT = ROOT / "examples/acme/contract.yaml"
POD = ROOT / "examples/fit/pod.yaml"
NODES = ROOT / "examples/fit/cluster.json"
SCENARIO = ROOT / "examples/promo-peak/single-pool"
SCENARIO_FILE = "scenario.yaml"
NOW = "2026-06-01T00:00:00Z"
TOKEN = "t" * 20
GUARD_SECONDS = 300  # the guard against a hang, not a speed assertion
HUGE = "9" * (sys.get_int_max_str_digits() + 700)  # past the int-str conversion limit
WIDE = "1" + "0" * 400  # an int Python holds, but no float does (OverflowError)


@dataclass(frozen=True)
class Target:
    """One command's file argument: the valid data it starts from and where shapes go."""

    base: Callable[[], Any]
    argv: Callable[[Path, Path], list[str]]  # (the file, a scratch dir) -> command line
    number: tuple  # a field read as a number
    mapping: tuple  # a mapping whose keys are checked
    strict: bool = True  # unknown fields are refused (contracts, token files)
    # where a case's file goes, given the command's folder and the case's file name: a file
    # read from a directory (a scenario's scenario.yaml) is written into a copy of it
    place: Callable[[Path, str], Path] = lambda folder, name: folder / name


def _contract() -> Any:
    return yaml.safe_load(CONTRACT.read_text())


def _scenario() -> Any:
    """The promo-peak scenario cut to ten minutes: a case the twin accepts runs in seconds."""
    data = yaml.safe_load((SCENARIO / SCENARIO_FILE).read_text())
    data["duration"] = "10m"
    return data


def _in_scenario_copy(folder: Path, name: str) -> Path:
    """`name` becomes scenario.yaml of its own scenario directory, beside the contract."""
    home = folder / name.replace(".", "-")
    home.mkdir()
    shutil.copy(SCENARIO / "contract.yaml", home / "contract.yaml")
    return home / SCENARIO_FILE


def _tokens_file(tmp: Path) -> Path:
    path = tmp / "good-tokens.yaml"
    path.write_text(f"tenants:\n  - name: finance\n    token: {TOKEN}\n")
    return path


TARGETS: dict[str, Target] = {
    "check": Target(
        _contract,
        lambda f, tmp: ["check", str(f), "--now", NOW],
        ("services", 0, "concurrency"),
        ("metadata",),
    ),
    "compile": Target(
        _contract,
        lambda f, tmp: ["compile", str(f), "--now", NOW, "--output-dir", str(tmp / "out")],
        ("services", 0, "concurrency"),
        ("services", 0),
    ),
    "fit-pod": Target(
        lambda: yaml.safe_load(POD.read_text()),
        lambda f, tmp: ["fit", "-f", str(f), "--nodes", str(NODES)],
        ("spec", "priority"),
        ("metadata", "labels"),
        strict=False,
    ),
    "fit-nodes": Target(
        lambda: json.loads(NODES.read_text()),
        lambda f, tmp: ["fit", "-f", str(POD), "--nodes", str(f)],
        ("items", 0, "status", "capacity", "cpu"),
        ("items", 0, "metadata", "labels"),
        strict=False,
    ),
    "serve-tokens": Target(
        lambda: {"tenants": [{"name": "finance", "token": TOKEN, "gpuHourBudget": 10}]},
        lambda f, tmp: ["serve", str(SCENARIO), "--tokens", str(f), "--port", "1"],
        ("tenants", 0, "gpuHourBudget"),
        ("tenants", 0),
    ),
    "serve-contract": Target(
        _contract,
        lambda f, tmp: [
            *("serve", str(SCENARIO), "--tokens", str(_tokens_file(tmp))),
            *("--contract", str(f), "--port", "1"),
        ],
        ("services", 0, "concurrency"),
        ("metadata",),
    ),
    "simulate-scenario": Target(
        _scenario,
        lambda f, tmp: ["simulate", str(f.parent), "--report", "-", "-o", "json"],
        ("jobs", 0, "perHour"),
        ("jobs", 0),
        place=_in_scenario_copy,
    ),
}

# --- shapes: (suffix, data -> text or bytes, fragments the error line must hold) -------------

_MARK = "__corpus_literal__"


def _set(data: Any, path: tuple, value: Any) -> Any:
    out = copy.deepcopy(data)
    parent = out
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return out


def _add_keys(data: Any, path: tuple, keys: dict) -> Any:
    out = copy.deepcopy(data)
    node = out
    for part in path:
        node = node[part]
    node.update(keys)
    return out


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _literal(fmt: str, literal: str) -> Callable[[Target], str]:
    """The number field written as `literal`, as the file has it (no dumper could write it)."""

    def build(t: Target) -> str:
        data = _set(t.base(), t.number, _MARK)
        if fmt == "json":
            return json.dumps(data, indent=1, default=str).replace(f'"{_MARK}"', literal)
        return _yaml(data).replace(_MARK, literal).replace(f"'{literal}'", literal)

    return build


def _value(value: Any) -> Callable[[Target], str]:
    return lambda t: _yaml(_set(t.base(), t.number, value))


def _keys(keys: dict) -> Callable[[Target], str]:
    return lambda t: _yaml(_add_keys(t.base(), t.mapping, keys))


def _duplicate(t: Target) -> str:
    """The mapping's first key written a second time (YAML would keep the last, silently)."""
    data = t.base()
    node = data
    for part in t.mapping:
        node = node[part]
    first = next(iter(node))
    text = _yaml(_add_keys(data, t.mapping, {_MARK: node[first]}))
    return text.replace(_MARK, first)


def _field(t: Target, of: str) -> str:
    return format_path(getattr(t, of))


FIELD_SHAPES: dict[str, tuple[str, Callable[[Target], str], str, tuple[str, ...]]] = {
    # name: (suffix, build, which field the line names, more fragments)
    "int-past-digit-limit-yaml": ("yaml", _literal("yaml", HUGE), "number", ("digits",)),
    "int-past-digit-limit-json": ("json", _literal("json", HUGE), "number", ("digits",)),
    "int-tagged-past-digit-limit": (
        "yaml",
        _literal("yaml", f"!!int {HUGE}"),
        "number",
        ("digits",),
    ),
    "int-past-float-yaml": ("yaml", _literal("yaml", WIDE), "number", ()),
    "int-past-float-json": ("json", _literal("json", WIDE), "number", ()),
    "float-past-range-yaml": ("yaml", _literal("yaml", "1.0e+400"), "number", ("float range",)),
    "float-past-range-json": ("json", _literal("json", "-1e400"), "number", ("float range",)),
    "long-float-yaml": ("yaml", _literal("yaml", f"{HUGE}.5"), "number", ("float range",)),
    "nan-json": ("json", _literal("json", "NaN"), "number", ("NaN",)),
    "infinity-json": ("json", _literal("json", "Infinity"), "number", ("Infinity",)),
    "nan-yaml": ("yaml", _literal("yaml", ".nan"), "number", ()),
    "inf-yaml": ("yaml", _literal("yaml", ".inf"), "number", ()),
    "negative-inf-yaml": ("yaml", _literal("yaml", "-.inf"), "number", ()),
    "list-for-number": ("yaml", _value([1, 2]), "number", ()),
    "mapping-for-number": ("yaml", _value({"a": 1}), "number", ()),
    "bool-for-number": ("yaml", _value(True), "number", ()),
    "mixed-keys": ("yaml", _keys({1: "x", "zz": "y"}), "mapping", ()),
    "int-keys": ("yaml", _keys({1: "x", 2: "y"}), "mapping", ()),
    "bool-and-null-keys": ("yaml", _keys({True: "x", None: "y"}), "mapping", ()),
    "float-key": ("yaml", _keys({1.5: "x"}), "mapping", ()),
    "duplicate-key": ("yaml", _duplicate, "mapping", ("duplicate",)),
    "unknown-field": ("yaml", _keys({"zzUnknown": 1}), "mapping", ("unknown field",)),
}
NON_STRICT_SKIP = {"unknown-field", "duplicate-key", "bool-and-null-keys", "float-key"}


def _nest(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


FILE_SHAPES: dict[str, tuple[str, str | bytes | None]] = {
    # name: (suffix, content); None: made by _special
    "fifo": ("yaml", None),
    "directory": ("yaml", None),
    "missing": ("yaml", None),
    "empty": ("yaml", ""),
    "only-comments": ("yaml", "# nothing here\n"),
    "nul-byte": ("yaml", "kind: x\nmetadata: {name: \x00}\n"),
    "not-utf8": ("yaml", b"kind: x\nmetadata:\n  name: \xff\xfe\n"),
    "utf16": ("yaml", "kind: x\n".encode("utf-16")),
    "unclosed-flow": ("yaml", "kind: x\nmetadata: {name: [\n"),
    "tab-indent": ("yaml", "kind: x\n\tmetadata: x\n"),
    "truncated-json": ("json", '{"kind": "x", "items": ['),
    "top-level-list": ("yaml", "- 1\n- 2\n"),
    "top-level-scalar": ("yaml", "just a string\n"),
    "deep-json": ("json", _nest(100_000)),
    "alias-cycle": ("yaml", "kind: x\nmetadata: &m {name: x, labels: [*m]}\n"),
    "control-character": ("yaml", "kind: x\nmetadata: {name: \x1b}\n"),
    "unhashable-key": ("yaml", "? [a, b]\n: 1\n"),
    "bom-then-malformed": ("yaml", "\ufeffkind: x\nmetadata: {name: [\n"),
}
DEVICE = Path("/dev/zero")


def _special(name: str, path: Path) -> None:
    if name == "fifo":
        os.mkfifo(path)
    elif name == "directory":
        path.mkdir()


def run_batch(cases: list[list[str]]) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(WORKER.parent)])}
    proc = subprocess.run(
        [sys.executable, str(WORKER)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@dataclass(frozen=True)
class Case:
    argv: list[str]
    file: str
    fragments: tuple[str, ...]


def build_cases(tmp: Path) -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for command, target in TARGETS.items():
        folder = tmp / command
        folder.mkdir()
        for shape, (suffix, build, which, more) in FIELD_SHAPES.items():
            if not target.strict and shape in NON_STRICT_SKIP:
                continue
            path = target.place(folder, f"{shape}.{suffix}")
            path.write_text(build(target), encoding="utf-8")
            field = _field(target, which)
            cases[f"{command}|{shape}"] = Case(target.argv(path, folder), str(path), (field, *more))
        bom = target.place(folder, "bom-then-bad-field.yaml")
        bom.write_bytes(b"\xef\xbb\xbf" + _literal("yaml", WIDE)(target).encode())
        cases[f"{command}|bom-then-bad-field"] = Case(
            target.argv(bom, folder), str(bom), (_field(target, "number"),)
        )
        for shape, (suffix, content) in FILE_SHAPES.items():
            path = target.place(folder, f"{shape}.{suffix}")
            if content is None:
                _special(shape, path)
            elif isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
            named = path
            if shape == "missing" and path != folder / f"{shape}.{suffix}":
                named = path.parent  # a directory without its file: the directory is named
            cases[f"{command}|{shape}"] = Case(target.argv(path, folder), str(named), ())
        if DEVICE.exists():
            device = target.place(folder, "device.yaml")
            if device != folder / "device.yaml":  # read from a directory: a link to the device
                device.symlink_to(DEVICE)
            else:
                device = DEVICE
            cases[f"{command}|device"] = Case(
                target.argv(device, folder), str(device), ("not a regular file",)
            )
    return cases


# commands whose file is read against a schema that lists every error it finds (kubectl-style)
MANY_ERRORS = ("check|", "compile|", "serve-contract|", "simulate-scenario|")

CASE_IDS = [
    f"{command}|{shape}"
    for command, target in TARGETS.items()
    for shape in [
        *(s for s in FIELD_SHAPES if target.strict or s not in NON_STRICT_SKIP),
        "bom-then-bad-field",
        *FILE_SHAPES,
        "device",
    ]
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Case, dict]]:
    cases = build_cases(tmp_path_factory.mktemp("corpus"))
    keys = list(cases)
    results = run_batch([cases[k].argv for k in keys])
    return {k: (cases[k], r) for k, r in zip(keys, results, strict=True)}


@pytest.mark.parametrize("case", CASE_IDS)
def test_malformed_input_is_one_located_line(corpus: dict, case: str) -> None:
    if case not in corpus:
        pytest.skip("no /dev/zero here")
    spec, result = corpus[case]
    assert result["crash"] is None, result["crash"]
    stderr = result["stderr"]
    assert "Traceback" not in stderr
    assert result["code"] == 2, result
    lines = stderr.strip().splitlines()
    assert lines and all(line.startswith(f"error: {spec.file}") for line in lines), lines
    if not case.startswith(MANY_ERRORS):
        assert len(lines) == 1, lines  # only a contract's or scenario's schema lists several
    for fragment in spec.fragments:
        assert any(fragment in line for line in lines), (fragment, lines)


def test_the_corpus_is_wide() -> None:
    assert len(CASE_IDS) >= 200

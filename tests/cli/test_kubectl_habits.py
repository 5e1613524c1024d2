"""kubectl habits: how objects are named (-n NS NAME, KIND/NAME), -l selectors, -o wide|name,
`-f -`, plain columns when piped, control characters never reach the terminal, the
kubectl-gpupact plugin name, and a CLI that starts without importing the engine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpupact
from gpupact.cli.diagnose import target_name
from gpupact.cli.main import COMMANDS, _register, app
from gpupact.errors import InputError
from gpupact.kube.selectors import parse_selector

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(gpupact.__file__).resolve().parents[1]
CONTRACT = ROOT / "examples/acme/contract.yaml"
POD = ROOT / "examples/fit/pod.yaml"
NODES = ROOT / "examples/fit/cluster.json"
FIXTURES = ROOT / "tests/ops/fixtures"
NOW = "2026-11-10T12:00:00Z"

_register()


def run(*args: str | Path, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], input=input)
    return result.exit_code, result.stdout, result.stderr


# --- naming one object -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "namespace", "expected"),
    [
        ("web-0", "shop", "pod/shop/web-0"),
        ("web-0", None, "pod/default/web-0"),
        ("pod/web-0", "shop", "pod/shop/web-0"),
        ("po/web-0", "shop", "pod/shop/web-0"),
        ("pg/llm", "finance", "podgroup/finance/llm"),
        ("workloads/wl-1", "team", "workload/team/wl-1"),
        ("shop/web-0", None, "pod/shop/web-0"),
        ("podgroup/finance/llm", None, "podgroup/finance/llm"),
        ("podgroup/finance/llm", "finance", "podgroup/finance/llm"),
    ],
)
def test_targets_as_kubectl_names_them(target: str, namespace: str | None, expected: str) -> None:
    assert target_name(target, namespace) == expected


@pytest.mark.parametrize(
    ("target", "namespace"), [("shop/web-0", "other"), ("a/b/c/d", None), ("pod/", None)]
)
def test_bad_targets(target: str, namespace: str | None) -> None:
    with pytest.raises(InputError):
        target_name(target, namespace)


def test_diagnose_dash_n_name_and_kind_slash_name_give_the_same_answer() -> None:
    snap = FIXTURES / "gang-half-started"
    base = ["diagnose", "--snapshot", snap, "--now", NOW, "-o", "json"]
    outputs = [
        run(*base, "-n", "ml-platform", "podgroup/lora-a"),
        run(*base, "podgroup/ml-platform/lora-a"),
        run(*base, "pg/lora-a", "-n", "ml-platform"),
    ]
    codes = {code for code, _, _ in outputs}
    assert codes == {1}, outputs
    subjects = {json.loads(out)["diagnoses"][0]["subject"] for _, out, _ in outputs}
    assert subjects == {"podgroup ml-platform/lora-a"}


def test_diagnose_dash_o_name_feeds_back_as_targets() -> None:
    snap = FIXTURES / "gang-half-started"
    code, out, err = run("diagnose", "-A", "--snapshot", snap, "--now", NOW, "-o", "name")
    assert code == 1, err
    names = out.split()
    assert "podgroup/ml-platform/lora-a" in names
    for name in names:
        again, _, err = run("diagnose", name, "--snapshot", snap, "--now", NOW, "-o", "name")
        assert again == 1 and err == "", (name, err)


# --- -l selectors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("env in (prod, staging)", {"env": "staging"}, True),
        ("env notin (prod)", {"env": "prod"}, False),
        ("gpu,!legacy", {"gpu": "1"}, True),
        ("gpu,!legacy", {"gpu": "1", "legacy": ""}, False),
        ("rank>3", {"rank": "4"}, True),
        ("rank<3", {"rank": "4"}, False),
        ("tier=", {"tier": ""}, True),
        ("", {"any": "thing"}, True),
    ],
)
def test_selector_strings_as_labels_parse(text: str, labels: dict, matches: bool) -> None:
    assert parse_selector(text).matches(labels) is matches


@pytest.mark.parametrize("text", ["a b", "a in x", "a in (b", "a=b=c", "-bad-=x", "rank>x"])
def test_bad_selector_strings(text: str) -> None:
    with pytest.raises(ValueError):
        parse_selector(text)


def test_dash_l_on_audit_diagnose_and_fit() -> None:
    snap = FIXTURES / "governance"
    code, out, _ = run("audit", "--snapshot", snap, "--now", NOW, "-o", "name")
    everything = out.split()
    code, out, _ = run(
        "audit",
        "--snapshot",
        snap,
        "--now",
        NOW,
        "-o",
        "name",
        "-l",
        "gpupact.io/tenant=ml-platform",
    )
    selected = out.split()
    assert selected and set(selected) < set(everything)
    assert all("ml-platform" in name for name in selected)
    gang = FIXTURES / "gang-half-started"
    code, out, _ = run(
        "diagnose", "-A", "--snapshot", gang, "--now", NOW, "-o", "name",
        "-l", "app.kubernetes.io/name=lora-b",
    )  # fmt: skip
    assert out.split() == ["podgroup/ml-platform/lora-b"]
    code, out, _ = run("fit", "-f", POD, "--nodes", NODES, "-l", "nodepool=gpu-inference")
    assert "gpu-inf-a100-1" in out and "gpu-batch" not in out
    assert "0/1 nodes are available" in out
    code, _, err = run("fit", "-f", POD, "--nodes", NODES, "-l", "a b")
    assert code == 2 and err.startswith("error: -l 'a b':")


# --- -o wide|name, plain columns, -f - -----------------------------------------------------------


def test_fit_prints_plain_columns_when_piped_and_more_with_wide() -> None:
    code, out, _ = run("fit", "-f", POD, "--nodes", NODES)
    lines = out.splitlines()
    assert lines[0].split() == ["NODE", "FITS", "PLUGIN", "WHY", "NOT"]
    assert not any(ch in out for ch in "│┃━─")  # no box drawing when not a terminal
    assert lines[1].split()[:3] == ["gpu-inf-a100-1", "no", "NodeResourcesFit"]
    code, wide, _ = run("fit", "-f", POD, "--nodes", NODES, "-o", "wide")
    assert code == 1
    assert wide.splitlines()[0].split()[-2:] == ["CODE", "REASONS"]
    assert "UnschedulableAndUnresolvable" in wide


def test_fit_dash_o_name_lists_the_nodes_it_fits() -> None:
    cluster = json.loads(NODES.read_text())
    cluster["items"] = [i for i in cluster["items"] if i["metadata"]["name"] != "cs-agent-llm-0"]
    code, out, err = run("fit", "-f", POD, "--nodes", "-", "-o", "name", input=json.dumps(cluster))
    assert code == 0, err
    assert out.split() == ["node/gpu-inf-a100-1"]


def test_check_reads_stdin_and_names_it() -> None:
    code, out, _ = run("check", "-f", "-", "-o", "name", "--now", NOW, input=CONTRACT.read_text())
    assert code in (0, 1) and out.strip() == "contract/acme"
    code, _, err = run("check", "-", input="kind: [")
    assert code == 2 and err.startswith("error: <stdin>:2:1: malformed YAML"), err


@pytest.mark.parametrize("fmt", ["wide", "name"])
def test_every_command_takes_wide_and_name(fmt: str) -> None:
    snap = FIXTURES / "healthy"
    for args in (
        ["check", CONTRACT, "--now", NOW],
        ["fit", "-f", POD, "--nodes", NODES],
        ["diagnose", "-A", "--snapshot", snap, "--now", NOW],
        ["audit", "--snapshot", snap, "--now", NOW],
    ):
        code, _, err = run(*args, "-o", fmt)
        assert code in (0, 1) and err == "", (args, err)


# --- names from a cluster never drive the terminal ---------------------------------------------


def test_escape_characters_in_names_are_shown_not_sent(tmp_path: Path) -> None:
    cluster = json.loads(NODES.read_text())
    evil = "gpu\x1b]0;owned\x07\x1b[2J\x9b31m"
    cluster["items"][0]["metadata"]["name"] = evil
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(cluster))
    for fmt in ("text", "wide", "json", "yaml"):
        code, out, _ = run("fit", "-f", POD, "--nodes", nodes, "-o", fmt)
        assert not any(c in out for c in "\x1b\x07\x9b"), (fmt, out)
    code, out, _ = run("fit", "-f", POD, "--nodes", nodes, "-o", "json")
    assert evil in json.loads(out)["feasibleNodes"] + [n["node"] for n in json.loads(out)["nodes"]]
    code, out, _ = run("fit", "-f", POD, "--nodes", nodes)
    assert code == 0  # renamed, the full node's bound pod is no longer on it: the pod fits
    assert "gpu\\x1b]0;owned\\x07\\x1b[2J\\x9b31m" in out


# --- entry points, help and version without the engine -------------------------------------------


def _subprocess(code: str, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


_MODULES_AFTER = """
import sys
sys.argv = ["gpupact", *sys.argv[1:]]
from gpupact.cli.main import main
try:
    main()
except SystemExit:
    pass
print("MODULES", " ".join(sorted(sys.modules)))
"""
# (Typer's own --help renders with rich, tables included: that is Typer's, not gpupact's)
HEAVY = ("numpy", "pydantic", "kubernetes", "yaml", "gpupact.engine", "gpupact.contract",
         "gpupact.ops", "gpupact.compile", "gpupact.cluster", "gpupact.kube")  # fmt: skip


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_no_command_module(argv: list[str]) -> None:
    proc = _subprocess(_MODULES_AFTER, *argv)
    modules = proc.stdout.split("MODULES", 1)[1].split()
    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == [], loaded
    assert not any(m.startswith("gpupact.cli.") and m != "gpupact.cli.main" for m in modules)
    for name in COMMANDS:
        assert name in proc.stdout or argv == ["--version"]


def test_every_listed_command_registers_under_its_name() -> None:
    from typer.main import get_command

    group = get_command(app)
    assert set(COMMANDS) <= set(group.commands)
    for name, (module, _) in COMMANDS.items():
        assert group.commands[name].callback.__module__ == module


def test_every_command_module_is_in_the_table() -> None:
    """A module that registers a command but is missing from COMMANDS would never run (the
    table is how `gpupact NAME` finds its module)."""
    cli = SRC / "gpupact" / "cli"
    registering = {
        f"gpupact.cli.{path.stem}"
        for path in cli.glob("*.py")
        # a command, or a group of them (`gpupact ledger ingest|report|...`)
        if re.search(r"^(@app\.command|app\.add_typer\()", path.read_text(encoding="utf-8"), re.M)
    }
    assert registering == {module for module, _ in COMMANDS.values()}


def test_the_kubectl_plugin_entry_point_says_kubectl_gpupact() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-gpupact"] == scripts["gpupact"] == "gpupact.cli.main:main"
    code = _MODULES_AFTER.replace('["gpupact",', '["/usr/local/bin/kubectl-gpupact",')
    proc = _subprocess(code, "--help")
    assert "Usage: kubectl gpupact" in proc.stdout


def test_license_is_apache_2() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == {
        "text": "Apache-2.0"
    }


def test_escape_characters_in_error_lines_are_shown_not_sent(tmp_path: Path) -> None:
    code, _, err = run("check", tmp_path / "\x1b[2Jgone.yaml")
    assert code == 2 and "\x1b" not in err
    assert "\\x1b[2Jgone.yaml: no such file" in err

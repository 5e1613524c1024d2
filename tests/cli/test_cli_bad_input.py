"""Every command on broken input: one `error:` line per problem on stderr, exit 2, no traceback.

Covers what each command's own tests do not: usage errors (unknown command or flag, bad choice,
missing option), files of the wrong shape for every file argument, several located contract
errors from `diagnose --contract`, unwritable output, malformed kubeconfigs, and output that
must be printed as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpupact.cli.main import Output, _register, app
from gpupact.cli.render import emit

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "examples/acme/contract.yaml"
POD = ROOT / "examples/fit/pod.yaml"
NODES = ROOT / "examples/fit/cluster.json"
SNAPSHOT = ROOT / "tests/ops/fixtures/healthy"
SCHEMA_ERRORS = ROOT / "tests/contract/fixtures/schema-errors.yaml"

_register()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def assert_one_error(code: int, stdout: str, stderr: str, *fragments: str) -> None:
    lines = stderr.strip().splitlines()
    assert code == 2, (code, stdout, stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stdout + stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# --- usage errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["bogus"], ["No such command 'bogus'", "gpupact --help"]),
        (["audit", "--snapshot", str(SNAPSHOT), "--bogus"], ["--bogus", "gpupact audit --help"]),
        (["check", str(CONTRACT), "-o", "xml"], ["'xml'", "gpupact check --help"]),
        (["compile", str(CONTRACT), "-o", "out/"], ["output format", "--output-dir out/"]),
        (["fit", "--nodes", str(NODES)], ["Missing option", "--filename"]),
        (["diagnose", "-A", "--snapshot", str(SNAPSHOT), "-n"], ["'-n' requires an argument"]),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: list[str], fragments: list[str]) -> None:
    assert_one_error(*run(*args), *fragments)


def test_help_and_version_still_exit_0() -> None:
    code, out, _ = run("fit", "--help")
    assert code == 0 and "--filename" in out
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("gpupact ")


def test_no_arguments_shows_the_help_exit_2() -> None:
    code, out, err = run()
    assert code == 2 and "Commands" in out + err and "error:" not in err


# --- files of the wrong shape, for every file argument ------------------------------------------


def _bad_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (path, a fragment of the expected message)."""
    (tmp / "a-dir").mkdir()
    (tmp / "empty.yaml").write_text("")
    (tmp / "binary.json").write_bytes(bytes(range(256)))
    (tmp / "nul.yaml").write_bytes(b"kind: Pod\nmetadata: {name: \x00}\n")
    (tmp / "truncated.json").write_text('{"kind": "NodeList", "items": [')
    (tmp / "scalar.yaml").write_text("42\n")
    return {
        "missing": (tmp / "missing.yaml", "no such file"),
        "directory": (tmp / "a-dir", "is a directory"),
        "empty": (tmp / "empty.yaml", "empty.yaml"),
        "binary": (tmp / "binary.json", "not UTF-8"),
        "nul": (tmp / "nul.yaml", "nul.yaml:2:"),
        "truncated": (tmp / "truncated.json", "malformed JSON"),
        "scalar": (tmp / "scalar.yaml", "scalar.yaml"),
    }


COMMANDS = {
    "check": lambda f, tmp: ["check", f],
    "compile": lambda f, tmp: ["compile", f, "--output-dir", tmp / "out"],
    "fit -f": lambda f, tmp: ["fit", "-f", f, "--nodes", NODES],
    "fit --nodes": lambda f, tmp: ["fit", "-f", POD, "--nodes", f],
    "fit --pods": lambda f, tmp: ["fit", "-f", POD, "--nodes", NODES, "--pods", f],
    "diagnose --contract": lambda f, tmp: [
        "diagnose",
        "-A",
        "--snapshot",
        SNAPSHOT,
        "--contract",
        f,
    ],
    "audit --contract": lambda f, tmp: ["audit", "--snapshot", SNAPSHOT, "--contract", f],
}
BAD = ["missing", "directory", "empty", "binary", "nul", "truncated", "scalar"]


# an empty --pods file is no pods at all (a cluster may have none), not bad input
CASES = [(c, b) for c in COMMANDS for b in BAD if (c, b) != ("fit --pods", "empty")]


@pytest.mark.parametrize(("command", "bad"), CASES)
def test_a_bad_file_is_one_line_exit_2(tmp_path: Path, command: str, bad: str) -> None:
    path, fragment = _bad_files(tmp_path)[bad]
    assert_one_error(*run(*COMMANDS[command](path, tmp_path)), fragment)


def test_a_control_character_is_located(tmp_path: Path) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text("kind: Pod\nmetadata:\n  name: p\x07q\n")
    assert_one_error(
        *run("fit", "-f", pod, "--nodes", NODES),
        f"{pod}:3:10: malformed YAML: unacceptable character #x0007",
    )


# --- several located errors, wherever a contract is read ----------------------------------------


@pytest.mark.parametrize("command", ["diagnose", "audit"])
def test_every_contract_error_gets_its_own_error_line(command: str) -> None:
    args = ["-A"] if command == "diagnose" else []
    code, out, err = run(command, *args, "--snapshot", SNAPSHOT, "--contract", SCHEMA_ERRORS)
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) > 1 and all(line.startswith(f"error: {SCHEMA_ERRORS}:") for line in lines)
    _, _, from_check = run("check", SCHEMA_ERRORS)
    assert err == from_check


# --- output the system refuses, kubeconfigs the client cannot read -------------------------------


def test_an_unwritable_output_is_one_line_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert_one_error(
        *run("compile", CONTRACT, "--output-dir", blocker / "out"),
        "a-file is a file, not a directory",
    )
    assert blocker.read_text() == "x"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"\xff\xfe\x00binary", "not a valid kubeconfig"),
        (b"- a\n- b\n", "not a valid kubeconfig"),
        (b"contexts: [\n", "not a valid kubeconfig"),
    ],
)
def test_a_malformed_kubeconfig_is_one_line_exit_2(
    tmp_path: Path, content: bytes, fragment: str
) -> None:
    pytest.importorskip("kubernetes")
    config = tmp_path / "kubeconfig"
    config.write_bytes(content)
    assert_one_error(*run("diagnose", "-A", "--context", "x", "--kubeconfig", config), fragment)


def test_a_kubeconfig_directory_is_one_line_exit_2(tmp_path: Path) -> None:
    pytest.importorskip("kubernetes")
    assert_one_error(*run("audit", "--context", "x", "--kubeconfig", tmp_path), "is a directory")


# --- machine-readable output is printed as it is ------------------------------------------------


@pytest.mark.parametrize("output", [Output.json, Output.yaml])
def test_emoji_codes_in_data_stay_text(capsys: pytest.CaptureFixture[str], output: Output) -> None:
    data = {"message": "ratio 1:100:2 :smile: [bold]x[/]"}
    emit(data, output)
    printed = capsys.readouterr().out
    if output is Output.json:
        assert json.loads(printed) == data
    else:
        assert "ratio 1:100:2 :smile: [bold]x[/]" in printed


def test_a_node_label_read_after_loading_is_still_one_line_exit_2(tmp_path: Path) -> None:
    cluster = json.loads(NODES.read_text())
    cluster["items"][0]["metadata"]["labels"]["nvidia.com/gpu.count"] = "lots"
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(cluster))
    assert_one_error(
        *run("fit", "-f", POD, "--nodes", nodes),
        "metadata.labels.nvidia.com/gpu.count: expected an integer, got 'lots'",
    )


# --- contracts that used to crash the loader or the compiler -------------------------------------


def _acme_with(tmp: Path, change) -> Path:
    contract = yaml.safe_load(CONTRACT.read_text())
    change(contract)
    path = tmp / "contract.yaml"
    path.write_text(yaml.safe_dump(contract, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("command", "change", "fragment"),
    [
        ("check", lambda c: c["classes"][0].update(name={"a": 1}), "classes[0].name: must be"),
        ("check", lambda c: c.update(pools=[]), "unknown pool 'gpu-inference' (known: none)"),
        ("check", lambda c: c["pools"][0]["node"].update(cpu=3 * 10**33), "is too large"),
        ("compile", lambda c: c["pools"][0]["nodes"].update(max=10**30), "pools[0].nodes.max"),
    ],
)
def test_broken_contract_is_bad_input_not_a_crash(tmp_path: Path, command, change, fragment):
    path = _acme_with(tmp_path, change)
    extra = ["--output-dir", tmp_path / "out"] if command == "compile" else []
    code, out, err = run(command, path, *extra)
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in out + err, err
    assert lines and all(line.startswith(f"error: {path}:") for line in lines), err
    assert any(fragment in line for line in lines), err


# --- durations longer than Kubernetes can hold ----------------------------------------------------


def test_a_huge_duration_is_located_bad_input(tmp_path: Path) -> None:
    path = _acme_with(tmp_path, lambda c: c["jobs"][0].update(duration="99999999999999999999d"))
    code, out, err = run("check", path)
    assert code == 2 and "Traceback" not in out + err, err
    assert f"{path}:" in err and "longer than a Kubernetes duration can be" in err


def test_a_huge_gang_threshold_is_one_line_exit_2() -> None:
    assert_one_error(
        *run("audit", "--snapshot", SNAPSHOT, "--gang-threshold", "99999999999999999h"),
        "--gang-threshold",
        "longer than a Go duration",
    )

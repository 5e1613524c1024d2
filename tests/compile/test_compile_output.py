"""Output files and `gpupact compile` end to end: determinism, layout, atomic replace, refusal
to overwrite what gpupact did not write, exit codes."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml
from compile_helpers import ACME, AFTER_EXPIRY, BEFORE_EXPIRY, ROOT, compile_acme
from typer.testing import CliRunner

import gpupact.cli.compile  # noqa: F401  (registers the command; the lead wires _register)
from gpupact.cli.main import app
from gpupact.compile import render_files, write_bundle
from gpupact.compile.writer import MARKER, OutputRefused

FLAWED = ROOT / "examples" / "acme" / "contract-flawed.yaml"
NOW = "2026-06-01T00:00:00Z"


def run(*args: str):
    return CliRunner().invoke(app, ["compile", *args])


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


# --- determinism ----------------------------------------------------------------------------


def test_compiling_twice_gives_byte_identical_files(tmp_path):
    for name in ("a", "b"):
        result = run(str(ACME), "--output-dir", str(tmp_path / name), "--now", NOW)
        assert result.exit_code == 0, result.output
    first, second = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert first == second
    assert render_files(compile_acme()) == render_files(compile_acme())


def test_output_depends_on_now_only_through_active_raises(tmp_path):
    before = render_files(compile_acme())
    later = BEFORE_EXPIRY.replace(month=12)  # still before 2026-12-31
    assert render_files(compile_acme(later)) == before
    after = render_files(compile_acme(AFTER_EXPIRY))
    changed = sorted(k for k in before if before[k] != after.get(k))
    assert changed == ["10-kueue.yaml", MARKER]


def test_no_timestamps_or_paths_in_output():
    for name, text in render_files(compile_acme()).items():
        assert "creationTimestamp" not in text, name
        assert str(ROOT) not in text, name


# --- layout ---------------------------------------------------------------------------------


def test_layout_kustomization_and_marker(tmp_path):
    written = write_bundle(compile_acme(), tmp_path / "out")
    out = tmp_path / "out"
    files = tree(out)
    assert set(written) == set(files)
    kustomization = yaml.safe_load(files["kustomization.yaml"])
    assert kustomization["resources"] == [
        "00-namespaces.yaml",
        "10-kueue.yaml",
        "20-volcano.yaml",
        "30-karpenter.yaml",
        "40-core.yaml",
        "50-leaderworkerset.yaml",
        "60-gpu-operator.yaml",
    ]
    images = {i["name"] for i in kustomization["images"]}
    assert "registry.invalid/gpupact/cs-agent" in images
    marker = json.loads(files[MARKER])
    assert marker["contract"] == "acme"
    for rel, digest in marker["files"].items():
        assert hashlib.sha256(files[rel]).hexdigest() == digest
    docs = list(yaml.safe_load_all(files["40-core.yaml"]))
    assert all({"apiVersion", "kind", "metadata"} <= set(d) for d in docs)
    kinds = [d["kind"] for d in docs]
    assert kinds.index("PriorityClass") < kinds.index("Deployment")
    patch = yaml.safe_load(files["node-patches/gpu-inference.yaml"])
    assert patch["spec"]["taints"][0]["value"] == "online-infer"
    assert "&id" not in files["50-leaderworkerset.yaml"].decode()  # no YAML anchors


def test_json_format_writes_lists(tmp_path):
    result = run(str(ACME), "--output-dir", str(tmp_path / "out"), "-o", "json", "--now", NOW)
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert all(r.endswith(".json") for r in kustomization["resources"])
    kueue = json.loads((out / "10-kueue.json").read_text())
    assert (kueue["apiVersion"], kueue["kind"]) == ("v1", "List")
    cq = next(i for i in kueue["items"] if i["metadata"]["name"] == "finance-gpu")
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 16


def test_recompiling_replaces_the_previous_output(tmp_path):
    out = tmp_path / "out"
    assert run(str(ACME), "--output-dir", str(out), "--now", NOW).exit_code == 0
    assert run(str(ACME), "--output-dir", str(out), "--now", NOW, "-o", "json").exit_code == 0
    names = set(tree(out))
    assert "40-core.json" in names and "40-core.yaml" not in names
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging left behind


# --- refusing to overwrite, atomicity -------------------------------------------------------


def test_refuses_a_directory_gpupact_did_not_write(tmp_path):
    out = tmp_path / "manifests"
    out.mkdir()
    (out / "mine.yaml").write_text("keep: me\n")
    result = run(str(ACME), "--output-dir", str(out), "--now", NOW)
    assert result.exit_code == 2
    assert "not written by gpupact compile" in result.stderr
    assert tree(out) == {"mine.yaml": b"keep: me\n"}


def test_refuses_foreign_files_inside_its_own_output(tmp_path):
    out = tmp_path / "out"
    write_bundle(compile_acme(), out)
    (out / "extra.yaml").write_text("x: 1\n")
    with pytest.raises(OutputRefused, match=r"extra\.yaml"):
        write_bundle(compile_acme(), out)
    assert (out / "extra.yaml").exists()


def test_refuses_a_file_and_accepts_an_empty_directory(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    result = run(str(ACME), "--output-dir", str(target), "--now", NOW)
    assert result.exit_code == 2 and "not a directory" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(str(ACME), "--output-dir", str(empty), "--now", NOW).exit_code == 0
    assert (empty / MARKER).exists()


def test_a_failed_write_leaves_the_previous_output_intact(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_bundle(compile_acme(), out)
    before = tree(out)
    calls = {"n": 0}
    real = Path.write_text

    def flaky(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", flaky)
    with pytest.raises(OSError, match="disk full"):
        write_bundle(compile_acme(), out, "json")
    monkeypatch.undo()
    assert tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# --- bad input ------------------------------------------------------------------------------


def test_raise_without_expiry_is_located_bad_input(tmp_path):
    result = run(str(FLAWED), "--output-dir", str(tmp_path / "out"), "--now", NOW)
    assert result.exit_code == 2
    assert "contract-flawed.yaml:" in result.stderr
    assert "raises[0].expires" in result.stderr and "no expiry" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.yaml"], "missing.yaml"),
        ([str(ACME), "--now", "tomorrow"], "--now"),
        ([str(ACME), "--now", "2026-06-01T00:00:00"], "no timezone"),
        ([str(ACME), "--node-class", "EC2NodeClass"], "--node-class"),
        ([str(ACME), "-f", str(ACME)], "give the contract file once"),
        ([], "missing contract file"),
    ],
)
def test_bad_input_exits_2(tmp_path, args, message):
    result = run(*args, "--output-dir", str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not (tmp_path / "out").exists()


def test_schema_errors_are_listed_one_per_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    data = yaml.safe_load(ACME.read_text())
    data["pools"][0]["nodes"]["max"] = "six"
    data["services"][0]["replicas"]["min"] = -1
    bad.write_text(yaml.safe_dump(data))
    result = run(str(bad), "--output-dir", str(tmp_path / "out"))
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 2, result.stderr


def test_success_message(tmp_path):
    result = run(str(ACME), "--output-dir", str(tmp_path / "out"), "--now", NOW)
    assert result.exit_code == 0
    assert "compiled contract acme: 50 objects" in result.stdout
    assert "kubectl apply -k" in result.stdout


# --- the output directory is the user's: never lose what gpupact did not write -------------------


def _marker(out: Path) -> dict:
    return json.loads((out / MARKER).read_text())


def test_a_string_files_in_the_marker_deletes_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("a", "b", "c"):
        (out / name).write_text(f"user file {name}\n")
    (out / MARKER).write_text(json.dumps({"generator": "gpupact compile", "files": "abc"}))
    with pytest.raises(OutputRefused, match="no valid"):
        write_bundle(compile_acme(), out)
    assert sorted(p.name for p in out.iterdir()) == ["a", "b", "c", MARKER]


@pytest.mark.parametrize(
    "listed",
    [["a"], {"a": "not-a-digest"}, {"../escape.yaml": "0" * 64}, {"/etc/passwd": "0" * 64}],
)
def test_a_marker_of_the_wrong_shape_is_refused(tmp_path, listed):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a").write_text("mine\n")
    (out / MARKER).write_text(json.dumps({"files": listed}))
    with pytest.raises(OutputRefused, match="no valid"):
        write_bundle(compile_acme(), out)
    assert (out / "a").read_text() == "mine\n"


def test_a_hand_edited_file_is_refused(tmp_path):
    out = tmp_path / "out"
    write_bundle(compile_acme(), out)
    edited = out / "40-core.yaml"
    edited.write_text(edited.read_text() + "# tuned by hand\n")
    with pytest.raises(OutputRefused, match=r"40-core\.yaml changed since gpupact wrote it"):
        write_bundle(compile_acme(), out)
    assert edited.read_text().endswith("# tuned by hand\n")


def test_an_empty_directory_it_did_not_create_is_kept(tmp_path):
    out = tmp_path / "out"
    write_bundle(compile_acme(), out)
    (out / "keep-me").mkdir()
    with pytest.raises(OutputRefused, match="keep-me/"):
        write_bundle(compile_acme(), out)
    assert (out / "keep-me").is_dir()


def test_a_directory_symlink_inside_is_kept(tmp_path):
    out = tmp_path / "out"
    write_bundle(compile_acme(), out)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data").write_text("precious\n")
    (out / "link").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OutputRefused, match="link \\(a symlink\\)"):
        write_bundle(compile_acme(), out)
    assert (out / "link").is_symlink() and (elsewhere / "data").read_text() == "precious\n"


def test_an_output_symlink_is_followed_and_kept(tmp_path):
    real = tmp_path / "real"
    write_bundle(compile_acme(), real)
    link = tmp_path / "current"
    link.symlink_to(real, target_is_directory=True)
    write_bundle(compile_acme(), link, "json")
    assert link.is_symlink() and (real / "40-core.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "real"]  # no .old-* left


def test_staging_left_by_a_killed_compile_is_removed(tmp_path):
    out = tmp_path / "out"
    dead = tmp_path / ".out.old-999999999-0123abcd"  # no such pid
    dead.mkdir()
    (dead / "x.yaml").write_text("x\n")
    unrelated = tmp_path / ".out.notes"
    unrelated.mkdir()
    write_bundle(compile_acme(), out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.notes", "out"]


def test_recompiling_over_its_own_node_patches_directory_works(tmp_path):
    out = tmp_path / "out"
    write_bundle(compile_acme(), out)
    assert any(p.startswith("node-patches/") for p in _marker(out)["files"])
    write_bundle(compile_acme(), out)  # its own subdirectory is not foreign


# --- -o is the output format; files go to --output-dir -------------------------------------------


def test_old_dash_o_directory_is_refused_with_a_pointer(tmp_path):
    result = run(str(ACME), "-o", str(tmp_path / "out"), "--now", NOW)
    assert result.exit_code == 2
    assert "-o is the output format" in result.stderr
    assert f"--output-dir {tmp_path / 'out'}" in result.stderr
    assert not (tmp_path / "out").exists()


def test_dash_o_yaml_prints_what_the_files_hold(tmp_path):
    printed = run(str(ACME), "-o", "yaml", "--now", NOW)
    assert printed.exit_code == 0
    streamed = [d for d in yaml.safe_load_all(printed.stdout) if d]
    assert run(str(ACME), "--output-dir", str(tmp_path / "out"), "--now", NOW).exit_code == 0
    files = yaml.safe_load((tmp_path / "out/kustomization.yaml").read_text())["resources"]
    written = [d for f in files for d in yaml.safe_load_all((tmp_path / "out" / f).read_text())]
    assert streamed == written


def test_dash_o_json_and_name(tmp_path):
    listed = json.loads(run(str(ACME), "-o", "json", "--now", NOW).stdout)
    assert listed["kind"] == "List" and len(listed["items"]) == 50
    names = run(str(ACME), "-o", "name", "--now", NOW).stdout.split()
    assert len(names) == 50
    assert "clusterqueue.kueue.x-k8s.io/finance-gpu" in names
    assert names[0].startswith("namespace/")


def test_contract_from_stdin(tmp_path):
    result = CliRunner().invoke(
        app, ["compile", "-f", "-", "-o", "name", "--now", NOW], input=ACME.read_text()
    )
    assert result.exit_code == 0, result.stderr
    assert "namespace/finance" in result.stdout.split()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_a_read_only_subdirectory_of_its_own_output_leaves_no_copy(tmp_path):
    out = tmp_path / "out"
    write_bundle(compile_acme(), out)
    (out / "node-patches").chmod(0o500)
    try:
        write_bundle(compile_acme(), out, "json")
    finally:
        for p in tmp_path.rglob("*"):
            if p.is_dir():
                p.chmod(0o700)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (out / "40-core.json").exists()

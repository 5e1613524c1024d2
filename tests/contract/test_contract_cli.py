"""`gpupact check` end to end: exit codes, one line per bad-input error, output formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpupact.cli.main import app

try:  # the lead wires `check` into _register(); until then import it ourselves
    from gpupact.cli.main import _register

    _register()
except ImportError:
    pass
import gpupact.cli.check  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
ACME = ROOT / "examples" / "acme" / "contract.yaml"
FLAWED = ROOT / "examples" / "acme" / "contract-flawed.yaml"
FIXTURES = Path(__file__).parent / "fixtures"
NOW = "2026-11-11T00:00:00Z"


def run(*args: str):
    return CliRunner().invoke(app, ["check", *args])


def error_lines(result) -> list[str]:
    return result.stderr.strip().splitlines()


def test_acme_example_is_clean():
    result = run(str(ACME), "--now", NOW)
    assert result.exit_code == 0, result.output
    # online-infer overflows into gpu-burst, where kube-scheduler lets it preempt burst
    assert "info    victim-rule-not-enforceable" in result.stdout
    assert (
        "contract acme: 0 errors, 0 warnings, 1 info (4 pools, 4 classes, 4 tenants, "
        "2 services, 3 jobs)" in result.stdout
    )


def test_acme_example_accepts_file_option():
    result = run("-f", str(ACME), "--now", NOW)
    assert result.exit_code == 0, result.output


def test_flawed_example_reports_findings():
    result = run(str(FLAWED), "--now", NOW, "-o", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    rules = {f["rule"] for f in report["findings"]}
    assert {
        "quota-exceeds-capacity",
        "preemptible-in-online-pool",
        "priority-inversion",
        "missing-owner",
        "missing-cost-center",
        "raise-without-expiry",
        "raise-expired",
        "online-shared-gpu-untested",
        "gpu-requests-not-limits",
        "nvlink-unavailable",
        "model-exceeds-gpu-memory",
        "job-exceeds-quota",
        "online-without-headroom",
        "pool-unreachable",
        "multi-pod-replica-without-gang",
        "service-expired",
        "burst-pool-without-prewarm",
    } <= rules
    assert report["summary"]["error"] > 0
    first = report["findings"][0]
    assert first["file"] == str(FLAWED) and isinstance(first["line"], int)


def test_text_output_shows_location_message_and_fix():
    result = run(str(FLAWED), "--now", NOW)
    assert result.exit_code == 1
    out = result.stdout
    assert f"{FLAWED}:86:11  jobs[0].pods" in out
    assert "fix: raise the tenant's quota on the pool or split the job" in out
    assert "contract acme-flawed:" in out and "errors" in out


def test_json_and_yaml_carry_the_same_report():
    as_json = json.loads(run(str(FLAWED), "--now", NOW, "-o", "json").stdout)
    as_yaml = yaml.safe_load(run(str(FLAWED), "--now", NOW, "-o", "yaml").stdout)
    assert as_json == as_yaml
    assert as_json["now"] == "2026-11-11T00:00:00+00:00"


def test_now_changes_expiry_findings():
    # the finance raise in the example expires 2026-12-31
    result = run(str(ACME), "--now", "2027-01-01T00:00:00Z", "-o", "json")
    assert result.exit_code == 1
    rules = [f["rule"] for f in json.loads(result.stdout)["findings"]]
    # without the raise, finance's service at its maximum replicas outgrows its quota
    assert rules == [
        "raise-expired",
        "service-replicas-exceed-quota",
        "victim-rule-not-enforceable",
    ]


def test_info_findings_do_not_fail(tmp_path):
    # a burst pool kept warm by nodes.min instead of preWarm windows: only an info finding
    data = yaml.safe_load(ACME.read_text())
    burst = data["pools"][3]
    del burst["preWarm"]
    burst["nodes"]["min"] = 1
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run(str(path), "--now", NOW, "-o", "json")
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["severity"]) for f in findings] == [
        ("burst-pool-without-prewarm", "info"),
        ("victim-rule-not-enforceable", "info"),  # acme's own: online may preempt burst
    ]
    assert result.exit_code == 0
    assert "info    burst-pool-without-prewarm" in run(str(path), "--now", NOW).stdout


# --- bad input: exit 2, one line per error, no traceback ----------------------------------


def assert_bad_input(result, expected: list[str]) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert error_lines(result) == expected


def test_schema_errors_with_line_and_column():
    f = FIXTURES / "schema-errors.yaml"
    assert_bad_input(
        run(str(f)),
        [
            f"error: {f}:7:28: pools[0].gpu.perNod: unknown field (did you mean 'perNode'?)",
            f"error: {f}:8:26: pools[0].nodes.max: max (2) must not be below min (3)",
            f"error: {f}:9:14: pools[0].sharing: time-slice replicas must be a whole number "
            f">= 2, got '1'",
            f"error: {f}:10:28: pools[0].coldStart.provision: expected a duration string with "
            f"a unit such as '3m', '90s' or '1h30m', got a number (180)",
            f"error: {f}:13:5: classes[0].priorty: unknown field (did you mean 'priority'?)",
            f"error: {f}:14:5: classes[1].latency: required field missing",
            f"error: {f}:14:5: classes[1].priority: required field missing",
            f"error: {f}:17:42: tenants[0].quotas[0].gpus: must be a valid integer, got '12'",
            f"error: {f}:18:68: tenants[0].raises[0].expires: timestamp 2026-11-10T08:00:00 "
            f"has no timezone: add one, e.g. 'Z'",
            f"error: {f}:22:30: services[0].model.params: expected a parameter count such as "
            f"'70B', '7.5B' or '350M', got '70 B'",
            f"error: {f}:22:50: services[0].model.quantization: must be 'fp32', 'bf16', "
            f"'fp16', 'fp8', 'fp8-channel', 'fp8-block', 'int8', 'int4' or 'nf4', got 'fp12'",
        ],
    )


def test_unknown_field():
    f = FIXTURES / "unknown-field.yaml"
    assert_bad_input(
        run(str(f)),
        [f"error: {f}:9:5: pools[0].clases: unknown field (did you mean 'classes'?)"],
    )


def test_reference_errors_with_paths():
    f = FIXTURES / "bad-references.yaml"
    assert_bad_input(
        run(str(f)),
        [
            f"error: {f}:9:29: pools[0].classes[1]: unknown class 'nope' (known: online-infer)",
            f"error: {f}:12:28: classes[0].pools[1]: unknown pool 'gpu-missing' "
            f"(known: gpu-inference)",
            f"error: {f}:15:61: tenants[0].quotas[0].borrowingLimit: borrowingLimit needs the "
            f"tenant to be in a cohort",
            f"error: {f}:17:29: services[0].class: unknown class 'batch' (known: online-infer)",
            f"error: {f}:17:44: services[0].tenant: unknown tenant 'who' (known: finance)",
            f"error: {f}:19:12: jobs[0].name: name 'cs-agent' already used by services[0]",
        ],
    )


@pytest.mark.parametrize(
    ("fixture", "message"),
    [
        ("malformed.yaml", "{f}:6:3: malformed YAML: did not find expected node content"),
        (
            "duplicate-key.yaml",
            "{f}:9:5: pools[0].nodes: duplicate key: a second value would "
            "silently replace the first",
        ),
        (
            "not-a-contract.yaml",
            "{f}:1:13: apiVersion: not a gpupact contract: apiVersion is "
            "'v1', expected 'gpupact.io/v1alpha1'",
        ),
        ("two-documents.yaml", "{f}:5: expected one Contract, found 2 documents"),
        ("empty.yaml", "{f}: empty file, expected a gpupact Contract"),
        ("a-list.yaml", "{f}:1:1: expected a mapping with apiVersion, kind and metadata"),
        ("missing.yaml", "{f}: no such file"),
    ],
)
def test_unreadable_input_is_one_line(fixture, message):
    f = FIXTURES / fixture
    assert_bad_input(run(str(f)), ["error: " + message.format(f=f)])


def test_directory_is_bad_input():
    assert_bad_input(run(str(FIXTURES)), [f"error: {FIXTURES}: is a directory, expected a file"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "error: missing contract file: gpupact check CONTRACT.yaml"),
        (
            (str(ACME), "-f", str(ACME)),
            "error: give the contract file once: as an argument or with -f, not both",
        ),
        (
            (str(ACME), "--now", "yesterday"),
            "error: --now: expected an ISO 8601 timestamp such as 2025-11-11T00:00:00Z, "
            "got 'yesterday'",
        ),
        (
            (str(ACME), "--now", "2026-11-11T00:00:00"),
            "error: --now: '2026-11-11T00:00:00' has no timezone; add one, e.g. 'Z'",
        ),
    ],
)
def test_bad_arguments(args, message):
    assert_bad_input(run(*args), [message])


def test_unknown_output_format_is_usage_error():
    result = run(str(ACME), "-o", "xml")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_default_now_is_read_once_and_works():
    result = run(str(ACME), "-o", "json")
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["now"].endswith("+00:00")


def test_check_refuses_what_compile_cannot_write(tmp_path):
    # a replica of 4 pods is a LeaderWorkerSet group; LWS gangs each group on its own, so a
    # gang over every replica cannot be compiled: check says so, at the field
    data = yaml.safe_load(ACME.read_text())
    data["services"][1]["gang"] = "service"
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run(str(path), "--now", NOW, "-o", "json")
    assert result.exit_code == 1
    [finding, _victim_rule] = json.loads(result.stdout)["findings"]
    assert (finding["rule"], finding["severity"], finding["path"]) == (
        "not-compilable",
        "error",
        "services[1].gang",
    )
    assert finding["line"] is not None and "use gang: replica" in finding["message"]

"""Issue 20's promise over this session's new inputs: each bad value below exits 2 with one
located line (file:line:column: field: reason), no traceback, no hang, and what the tool cannot
honour is refused rather than run. The corpus (test_malformed_corpus.py) throws the generic
shapes at every file; these are the values only one field can get wrong.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_malformed_corpus import write_scenario_home
from typer.testing import CliRunner

from gpupact.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "examples/acme/contract.yaml"
SCENARIO = ROOT / "examples/promo-peak/single-pool"
POD = ROOT / "examples/fit/pod.yaml"
NODES = ROOT / "examples/fit/cluster.json"
NOW = "2026-06-01T00:00:00Z"

_register()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def assert_located(result: tuple[int, str, str], file: Path, field: str, *fragments: str) -> str:
    """Exit 2, one `error: FILE:LINE:COL: FIELD: reason` line naming `field`; the line."""
    code, stdout, stderr = result
    lines = stderr.strip().splitlines()
    assert code == 2, (code, stdout[-2000:], stderr)
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"error: {file}:"), line
    location = line[len(f"error: {file}:") :].split(": ", 1)[0]
    assert all(part.isdigit() for part in location.split(":")), line  # line:column
    assert f": {field}: " in line, (field, line)
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


# --- the contract's timeZone ----------------------------------------------------------------


def _contract_with(tmp_path: Path, **fields: Any) -> Path:
    data = yaml.safe_load(CONTRACT.read_text())
    data.update(fields)
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("zone", "fragment"),
    [
        ("America", "unknown time zone"),  # a folder of the zone database, not a zone
        ("Etc", "unknown time zone"),
        ("A" * 300, "IANA"),  # past a file name's length (OSError before the fix)
        ("Asia/" + "S" * 15, "IANA"),  # a part longer than tz's 14 characters
        ("Local", "own zone"),
        ("local", "own zone"),  # the API server compares case-insensitively
        ("localtime", "own zone"),  # the host's /etc/localtime link, not an IANA name
        ("Asia/../Europe/Paris", "IANA"),
        ("/etc/localtime", "IANA"),
        ("-0500", "IANA"),  # a part starting with '-'
        ("", "IANA"),
        ("Asia/Shanghai ", "IANA"),
        ("leapseconds", "unknown time zone"),  # a file of the database that is not a zone
        (5, "IANA"),
        (["UTC"], "IANA"),
    ],
)
def test_a_bad_time_zone_is_located(tmp_path: Path, zone: Any, fragment: str) -> None:
    path = _contract_with(tmp_path, timeZone=zone)
    for command in (["check", path, "--now", NOW], ["compile", path, "--now", NOW, "-o", "yaml"]):
        assert_located(run(*command), path, "timeZone", fragment)


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "America/Argentina/Buenos_Aires", "Etc/GMT+5"])
def test_a_good_time_zone_is_compiled(tmp_path: Path, zone: str) -> None:
    path = _contract_with(tmp_path, timeZone=zone)
    code, stdout, stderr = run("compile", path, "--now", NOW, "-o", "yaml")
    assert code == 0, stderr
    assert f"timeZone: {zone}" in stdout


# --- scenario.yaml --------------------------------------------------------------------------


def _scenario_with(tmp_path: Path, **fields: Any) -> Path:
    home = tmp_path / "scenario"
    home.mkdir()
    shutil.copy(SCENARIO / "contract.yaml", home / "contract.yaml")
    data = yaml.safe_load((SCENARIO / "scenario.yaml").read_text())
    data["duration"] = "10m"
    for key, value in fields.items():
        node = data
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    (home / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return home


def simulate(home: Path) -> tuple[int, str, str]:
    return run("simulate", home, "--report", "-", "-o", "json")


@pytest.mark.parametrize("period", ["0s", "1ms", "999ms"])
def test_an_hpa_sync_period_under_a_second_is_refused(tmp_path: Path, period: str) -> None:
    """0 divided by zero; 1ms queued 600,000 syncs for ten minutes (a hang at a month)."""
    home = _scenario_with(tmp_path, **{"hpa.syncPeriod": period})
    assert_located(simulate(home), home / "scenario.yaml", "hpa.syncPeriod", "at least 1s")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_rate_says_so(tmp_path: Path, value: float) -> None:
    """Not 'must be greater than or equal to 0', which NaN's failed comparison said."""
    home = _scenario_with(tmp_path)
    data = yaml.safe_load((home / "scenario.yaml").read_text())
    data["jobs"] = data["jobs"][:1]
    data["jobs"][0]["perHour"] = value
    (home / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert_located(simulate(home), home / "scenario.yaml", "jobs[0].perHour", "finite")


@pytest.mark.parametrize("value", [1e308, 1e16, -1e300])
def test_a_rate_past_1e15_is_out_of_range(tmp_path: Path, value: float) -> None:
    """1e308 requests/s overflowed the serving model (math domain error)."""
    home = _scenario_with(tmp_path)
    data = yaml.safe_load((home / "scenario.yaml").read_text())
    data["load"][0]["rps"][0]["value"] = value
    (home / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert_located(simulate(home), home / "scenario.yaml", "load[0].rps[0].value", "range")


def test_a_fifo_named_scenario_yaml_is_named(tmp_path: Path) -> None:
    """Not 'no scenario.yaml here': the file is there and is not a regular file."""
    home = tmp_path / "scenario"
    home.mkdir()
    fifo = home / "scenario.yaml"
    os.mkfifo(fifo)
    code, _, stderr = simulate(home)
    assert code == 2 and stderr.startswith(f"error: {fifo}"), stderr
    assert "not a regular file" in stderr


def test_a_contract_that_is_a_directory_is_named(tmp_path: Path) -> None:
    home = _scenario_with(tmp_path)
    (home / "contract.yaml").unlink()
    (home / "contract.yaml").mkdir()
    code, _, stderr = simulate(home)
    assert code == 2 and "not found" not in stderr, stderr
    assert "contract.yaml" in stderr and len(stderr.strip().splitlines()) == 1, stderr


@pytest.mark.parametrize(
    ("field", "value"),
    [("autoscaler.scanInterval", "1ms"), ("autoscaler.scanInterval", "0s")],
)
def test_an_autoscaler_scan_under_a_second_is_refused(
    tmp_path: Path, field: str, value: str
) -> None:
    """Scans are queued whatever the provisioner: 1ms is a month of 2.7 billion events."""
    home = _scenario_with(tmp_path, **{field: value})
    line = assert_located(simulate(home), home / "scenario.yaml", field)
    assert "at least 1s" in line or "positive" in line


@pytest.mark.parametrize(
    ("window", "fragment"),
    [
        ({"schedule": "0 18 28 * *", "duration": "0s", "minNodes": 1}, "at least 1s"),
        ({"schedule": "0 18 28 * *", "duration": "999ms", "minNodes": 1}, "at least 1s"),
        (
            {"start": "2026-11-10T00:00:00Z", "end": "2026-11-10T00:00:00.5Z", "minNodes": 1},
            "at least 1s",
        ),
    ],
)
def test_a_window_shorter_than_a_second_is_refused(
    tmp_path: Path, window: dict, fragment: str
) -> None:
    """Compiled as a Job's activeDeadlineSeconds: 0 would end the pre-warm Job at once."""
    data = yaml.safe_load(CONTRACT.read_text())
    data["pools"][3]["preWarm"] = [window]
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert_located(run("compile", path, "--now", NOW, "-o", "yaml"), path, "pools[3].preWarm[0]")


# --- gpupact plan: flags and --model-config -----------------------------------------------

PLAN = ("plan", "--gpu", "h100-80gb", "--concurrency", "4")
LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


def assert_one_line(result: tuple[int, str, str], *fragments: str) -> str:
    code, _, stderr = result
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, stderr)
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.mark.parametrize(
    ("flags", "fragments"),
    [
        (["--gpu-memory-utilization", "nan"], ["--gpu-memory-utilization", "(0, 1]"]),
        (["--gpu-memory-utilization", "0"], ["--gpu-memory-utilization"]),
        (["--gpu-memory-utilization", "1.01"], ["--gpu-memory-utilization"]),
        (["--gpu-memory-utilization", "-inf"], ["--gpu-memory-utilization"]),
        (["--max-num-seqs", "0"], ["--max-num-seqs"]),
        (["--max-num-batched-tokens", "0"], ["--max-num-batched-tokens"]),
        # vLLM's SchedulerConfig refuses a token budget below max_num_seqs: it never starts
        (["--max-num-batched-tokens", "100"], ["--max-num-batched-tokens", "1024", "vLLM"]),
        (
            ["--max-num-seqs", "300", "--max-num-batched-tokens", "299"],
            ["--max-num-batched-tokens", "299", "300"],
        ),
        (["--gpu-memory", "nan"], ["--gpu-memory"]),
        (["--gpu-memory", "-80Gi"], ["--gpu-memory"]),
        (["--quantization", "awq4"], ["--quantization", "awq4"]),
        (["--kv-cache-dtype", "fp3"], ["--kv-cache-dtype"]),
        (["--engine", "tgi"], ["--engine"]),
        (["--ttft-slo", "0s"], ["--ttft-slo", "longer than 0s"]),  # a ZeroDivisionError before
    ],
)
def test_plan_flags_out_of_range(flags: list[str], fragments: list[str]) -> None:
    assert_one_line(run(*PLAN, "--model", "llama-3.1-8b", *flags), *fragments)


def test_an_unknown_model_lists_close_names() -> None:
    line = assert_one_line(run(*PLAN, "--model", "lama-3.1-8b"), "--model", "lama-3.1-8b")
    assert "llama-3.1-8b" in line.split("closest", 1)[-1]


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--heads", "8192"], "--heads"),  # hidden 4096 / 8192 heads: a head 0 wide
        (["--kv-heads", "3"], "--kv-heads"),  # 3 KV heads cannot serve 32 heads evenly
        (["--experts", "8", "--experts-per-token", "9"], "--experts-per-token"),
    ],
)
def test_an_architecture_no_model_has_is_refused(flags: list[str], fragment: str) -> None:
    shape = ["--layers", "32", "--hidden", "4096", "--heads", "32", "--vocab", "32000"]
    assert_one_line(run(*PLAN, "--model", "in-house-7b", *shape, *flags), fragment)


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "field", "fragment"),
    [
        (json.dumps({**LLAMA, "num_key_value_heads": 0}), "num_key_value_heads", "KV head"),
        (json.dumps({**LLAMA, "num_attention_heads": 8192}), "num_attention_heads", "width"),
        (json.dumps({**LLAMA, "vocab_size": 0}), "vocab_size", ""),
        (json.dumps({**LLAMA, "num_hidden_layers": 10**400}), "num_hidden_layers", "2147483647"),
        (json.dumps(LLAMA).replace("4096", "9" * 5000), "hidden_size", "digits"),
        (json.dumps(LLAMA).replace("131072", "NaN"), "max_position_embeddings", "NaN"),
        (json.dumps(LLAMA).replace("131072", "1e400"), "max_position_embeddings", ""),
        (json.dumps({**LLAMA, "hidden_size": "4096"}), "hidden_size", "integer"),
        (json.dumps({k: v for k, v in LLAMA.items() if k != "vocab_size"}), "vocab_size", ""),
        (
            json.dumps({**LLAMA, "num_local_experts": 8, "num_experts_per_tok": 9}),
            "num_experts_per_tok",
            "",
        ),
        (
            # negative MoE layers: plan searched for a replica without end
            json.dumps(
                {**LLAMA, "num_local_experts": 8, "num_experts_per_tok": 2}
                | {"first_k_dense_replace": 10**9}
            ),
            "first_k_dense_replace",
            "more than the 32 layers",
        ),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "", "nested"),
        ("[1, 2]", "", "JSON object"),
    ],
)
def test_a_bad_model_config_is_located(
    tmp_path: Path, text: str, field: str, fragment: str
) -> None:
    path = _config(tmp_path, text)
    line = assert_one_line(run(*PLAN, "--model-config", path), fragment)
    assert line.startswith(f"error: {path}:") and field in line, line


@pytest.mark.parametrize("weights", [None, ["int4"], "w4a16"])
def test_a_compressed_tensors_config_of_another_shape_is_no_crash(
    tmp_path: Path, weights: Any
) -> None:
    """`config_groups.*.weights` not a mapping was an AttributeError."""
    quant = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": weights}}}
    path = _config(tmp_path, json.dumps({**LLAMA, "quantization_config": quant}))
    code, _, stderr = run(*PLAN, "--model-config", path)
    assert code in (0, 1), stderr


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_model_config_that_is_no_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "config.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path = Path("/dev/zero")
        if not path.exists():
            pytest.skip("no /dev/zero")
    assert_one_line(run(*PLAN, "--model-config", path), str(path))


# --- simulate --snapshot / --context --------------------------------------------------------

SNAPSHOT = ROOT / "tests/ops/fixtures/healthy"


def _acme_scenario(tmp_path: Path) -> Path:
    return write_scenario_home(tmp_path / "acme")  # acme's contract


@pytest.mark.parametrize("kind", ["fifo", "dangling-link", "device"])
def test_a_snapshot_file_that_cannot_be_read_is_refused(tmp_path: Path, kind: str) -> None:
    """Skipped before: the run started from the cluster without its pods."""
    snap = tmp_path / "snap"
    shutil.copytree(SNAPSHOT, snap)
    pods = snap / "pods.json"
    pods.unlink()
    if kind == "fifo":
        os.mkfifo(pods)
    elif kind == "dangling-link":
        pods.symlink_to(tmp_path / "gone.json")
    else:
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        pods.symlink_to("/dev/zero")
    line = assert_one_line(simulate_from(tmp_path, "--snapshot", snap), str(pods))
    assert "regular file" in line or "no such file" in line


def simulate_from(tmp_path: Path, *args: str | Path) -> tuple[int, str, str]:
    return run("simulate", _acme_scenario(tmp_path), *args, "--report", "-", "-o", "json")


def test_now_before_the_snapshot_is_refused(tmp_path: Path) -> None:
    """A moment before the pods started would give them negative ages."""
    line = assert_one_line(
        simulate_from(tmp_path, "--snapshot", SNAPSHOT, "--now", "2020-01-01T00:00:00Z"),
        "--now",
        "2020-01-01T00:00:00Z",
    )
    assert "2026-11-10" in line  # the snapshot's latest time, named


def test_a_context_the_kubeconfig_lacks_is_named(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "dev",
            }
        )
    )
    line = assert_one_line(
        simulate_from(tmp_path, "--kubeconfig", kubeconfig, "--context", "prod"), "--context"
    )
    assert '"prod" does not exist' in line and "dev" in line


def test_a_context_without_any_kubeconfig_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert_one_line(simulate_from(tmp_path, "--context", "prod"), "--context prod", "kubeconfig")


def test_a_kubeconfig_that_is_a_device_is_not_missing(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    line = assert_one_line(simulate_from(tmp_path, "--kubeconfig", "/dev/zero"), "/dev/zero")
    assert "regular file" in line


# --- fit -f: ports the API server refuses --------------------------------------------------


@pytest.mark.parametrize(
    ("ports", "host_network", "field", "fragment"),
    [
        ([{"containerPort": 0}], False, "ports[0].containerPort", "Required value"),
        ([{"containerPort": 65536}], False, "ports[0].containerPort", "1 and 65535"),
        ([{"containerPort": 80, "hostPort": -1}], False, "ports[0].hostPort", "1 and 65535"),
        ([{"containerPort": 80, "protocol": "tcp"}], False, "ports[0].protocol", "Unsupported"),
        (
            [{"containerPort": 80, "hostPort": 80}, {"containerPort": 81, "hostPort": 80}],
            False,
            "ports[1].hostPort",
            "Duplicate value",
        ),
        ([{"containerPort": 80, "hostPort": 81}], True, "ports[0].hostPort", "hostNetwork"),
    ],
)
def test_fit_refuses_ports_the_api_server_refuses(
    tmp_path: Path, ports: list, host_network: bool, field: str, fragment: str
) -> None:
    pod = yaml.safe_load(POD.read_text())
    pod["spec"]["containers"][0]["ports"] = ports
    if host_network:
        pod["spec"]["hostNetwork"] = True
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod, sort_keys=False))
    line = assert_one_line(run("fit", "-f", path, "--nodes", NODES), f"spec.containers[0].{field}")
    assert line.startswith(f"error: {path}:") and fragment in line, line


@pytest.mark.parametrize(
    "ports",
    [
        [
            {"containerPort": 80, "hostPort": 80},
            {"containerPort": 80, "hostPort": 80, "protocol": "UDP"},
        ],
        [{"containerPort": 8080, "name": "http"}],
    ],
)
def test_fit_takes_ports_the_api_server_takes(tmp_path: Path, ports: list) -> None:
    pod = yaml.safe_load(POD.read_text())
    pod["spec"]["containers"][0]["ports"] = ports
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod, sort_keys=False))
    code, _, stderr = run("fit", "-f", path, "--nodes", NODES)
    assert code in (0, 1), stderr


def test_a_contract_ttft_slo_of_zero_is_located(tmp_path: Path) -> None:
    """`plan -f` divided by it (ZeroDivisionError); check and compile took it."""
    data = yaml.safe_load(CONTRACT.read_text())
    data["services"][0]["ttftSlo"] = "0s"
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    for command in (["plan", "-f", path], ["check", path, "--now", NOW]):
        assert_located(run(*command), path, "services[0].ttftSlo", "longer than 0s")


def test_a_node_with_a_null_spec_starts_as_an_empty_spec(tmp_path: Path) -> None:
    """`spec: null` decodes as an empty spec upstream; patching the contract's taints onto it
    was a TypeError."""
    snap = tmp_path / "snap"
    shutil.copytree(SNAPSHOT, snap)
    nodes = json.loads((snap / "nodes.json").read_text())
    for node in nodes["items"]:
        node["spec"] = None
    (snap / "nodes.json").write_text(json.dumps(nodes))
    code, stdout, stderr = simulate_from(tmp_path, "--snapshot", snap)
    assert code == 0, stderr
    assert json.loads(stdout)[0]["startingState"]["nodes"]["total"] == len(nodes["items"])


@pytest.mark.parametrize(
    ("model", "fragment"),
    [
        # the catalogue's 32 heads with 3 KV heads from the contract
        ({"name": "llama-3.1-8b", "params": "8B", "architecture": {"kvHeads": 3}}, "kvHeads"),
        (
            {
                "name": "in-house",
                "params": "8B",
                "architecture": {"layers": 32, "hidden": 4096, "heads": 8192, "vocab": 1000},
            },
            "heads",
        ),
    ],
)
def test_a_contract_architecture_no_model_has(tmp_path: Path, model: dict, fragment: str) -> None:
    """Planned before (a KV cache of nothing, heads shared unevenly); now check locates it and
    plan refuses it."""
    data = yaml.safe_load(CONTRACT.read_text())
    data["services"][0]["model"] = model
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, stdout, _ = run("check", path, "--now", NOW)
    assert code == 1 and f"{path}:" in stdout and "services[0].model.architecture" in stdout
    assert_one_line(run("plan", "-f", path), "model.architecture", fragment)


@pytest.mark.parametrize("dtype", ["fp8_e5m2", "fp8_e4m3", "auto"])
def test_vllm_kv_cache_dtypes_are_taken(dtype: str) -> None:
    """fp8_e5m2 is one of vLLM's --kv-cache-dtype choices; it was 'unknown format'."""
    code, _, stderr = run(*PLAN, "--model", "llama-3.1-8b", "--kv-cache-dtype", dtype)
    assert code in (0, 1), stderr


@pytest.mark.parametrize("kind", ["directory", "device"])
def test_a_profiles_ledger_that_is_no_file_is_not_called_missing(tmp_path: Path, kind: str) -> None:
    path = tmp_path if kind == "directory" else Path("/dev/zero")
    if not path.exists():
        pytest.skip("no /dev/zero")
    line = assert_one_line(run(*PLAN, "--model", "llama-3.1-8b", "--profiles", path), str(path))
    assert "regular file" in line and "no such" not in line


def test_a_step_budget_too_small_to_simulate_is_refused_not_run() -> None:
    # work grows as tokens / budget: 4 tokens a step took minutes; refused in one line
    from gpupact.errors import InputError
    from gpupact.plan.engine_flags import MIN_BATCHED_TOKENS, Engine, engine_flags

    with pytest.raises(InputError, match=f"below the {MIN_BATCHED_TOKENS} plan models"):
        engine_flags(
            Engine.vllm, 80 * 2**30, "h100-80gb", 1, max_num_seqs=1, max_num_batched_tokens=4
        )
    flags = engine_flags(
        Engine.vllm, 80 * 2**30, "h100-80gb", 1, max_num_seqs=16, max_num_batched_tokens=64
    )
    assert flags.max_num_batched_tokens == 64

"""Issue 20's promise over session 6's new surfaces: plan's CUDA-graph flags, the module lists
of a config.json's quantization_config, time-sliced pools' memory share and the schedule a
Volcano Job carries into the twin. Each bad value exits 2 with one located line and no
traceback; what could hang (a backtracking regex, a list of 100,000 patterns) runs in a
subprocess under a guard (test_malformed_corpus.run_batch), so a hang fails instead of holding
the suite. The corpus (test_malformed_corpus.py) holds the located-line cases of the lists.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupact.contract.units import MAX_TIMESLICE_REPLICAS
from gpupact.plan.name_patterns import MATCH_BUDGET, Budget, regex_names, trie_of

sys.path.insert(0, str(Path(__file__).parent))
from test_malformed_corpus import run_batch, write_scenario_home
from test_new_surfaces_bad_input import LLAMA as SURFACES_LLAMA
from test_new_surfaces_bad_input import run

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "examples/acme/contract.yaml"
SNAPSHOT = ROOT / "tests/ops/fixtures/healthy"
NOW = "2026-06-01T00:00:00Z"
PLAN = ["plan", "--model", "llama-3.1-8b", "--gpu", "h100-80gb", "--concurrency", "4"]


# --- --enforce-eager and --cuda-graph-max-bs -------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "fragments"),
    [
        # SGLang tests cuda_graph_max_bs for truth: 0 captures its default sizes, not none
        (["--engine", "sglang", "--cuda-graph-max-bs", "0"], ("--cuda-graph-max-bs", "eager")),
        (["--engine", "sglang", "--cuda-graph-max-bs", "-1"], ("--cuda-graph-max-bs",)),
        (["--engine", "sglang", "--cuda-graph-max-bs", "1e30"], ("--cuda-graph-max-bs",)),
        (["--engine", "sglang", "--cuda-graph-max-bs", "nan"], ("--cuda-graph-max-bs",)),
        (["--engine", "trtllm", "--enforce-eager"], ("TensorRT-LLM",)),
        (["--engine", "trtllm", "--cuda-graph-max-bs", "8"], ("TensorRT-LLM",)),
        (["--engine", "vllm", "--cuda-graph-max-bs", "8"], ("--engine sglang",)),
        (["--cuda-graph-max-bs", str(2**64)], ("--engine sglang",)),  # vLLM, the default
        (
            ["--engine", "trtllm", "--enforce-eager", "--max-num-seqs", "8"],
            ("TensorRT-LLM",),
        ),
    ],
)
def test_graph_flags_that_cannot_run_are_refused(flags: list[str], fragments: tuple) -> None:
    code, _, stderr = run(*PLAN, *flags)
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, stderr)
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines)


def test_a_huge_cuda_graph_max_bs_is_the_running_batch() -> None:
    """Past int64 the graphs cover every decode batch the engine runs: the same plan as a
    bound just above its running cap, and no slower (the step loop never counts to it)."""
    cases = [
        [*PLAN, "--engine", "sglang", "--cuda-graph-max-bs", str(n), "-o", "json"]
        for n in (2**63, 10**30, 2**1000)
    ] + [
        [*PLAN, "--engine", "sglang", "--cuda-graph-max-bs", "4096", "-o", "json"],
        [
            *PLAN,
            *("--engine", "sglang", "--cuda-graph-max-bs", str(2**70)),
            *("--max-num-seqs", str(2**70), "--max-num-batched-tokens", str(2**40)),
        ],
    ]
    results = run_batch(cases)
    for r in results:
        assert r["crash"] is None and r["code"] in (0, 1), r
    assert "Traceback" not in "".join(r["stderr"] for r in results)


def test_enforce_eager_with_a_graph_bound_is_eager() -> None:
    """SGLang's --disable-cuda-graph wins over --cuda-graph-max-bs: no step replays a graph."""
    code, eager, err = run(*PLAN, "--engine", "sglang", "--enforce-eager", "-o", "json")
    assert code in (0, 1), err
    code, both, err = run(
        *PLAN, "--engine", "sglang", "--enforce-eager", "--cuda-graph-max-bs", "64", "-o", "json"
    )
    assert code in (0, 1), err
    assert json.loads(both)["engine"] == json.loads(eager)["engine"]


# --- quantization_config module lists ----------------------------------------------------------

LLAMA = {"architectures": ["LlamaForCausalLM"], **SURFACES_LLAMA}
# a DeepSeek-sized expert count: 58 MoE layers x 256 experts x 3 = 44,544 expert modules
MOE = {
    **LLAMA,
    "model_type": "qwen3_moe",
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "moe_intermediate_size": 2048,
}
CT = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4}}}}


def _config(tmp_path: Path, name: str, base: dict, q: dict) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**base, "quantization_config": q}))
    return path


def _plan_config(path: Path, *more: str) -> list[str]:
    return ["plan", "--model-config", str(path), "--gpu", "h200-141gb", "--concurrency", "4",
            "-o", "json", *more]  # fmt: skip


def _weights(result: dict) -> int:
    assert result["crash"] is None and result["code"] in (0, 1), result
    return json.loads(result["stdout"])["memory"]["weightsBytes"]


BACKTRACKING = ["(.+)+z", "(a+)+$", "(.*)*x$", "(a|a)*b", "(.*a){20}", ".*.*.*.*.*.*.*.*.*.*z"]


def test_backtracking_patterns_do_not_hang_plan(tmp_path: Path) -> None:
    """Each takes Python's re exponential or high-polynomial time on a module name; plan's
    matcher runs them in time linear in the names: they name nothing here, and say so."""
    cases = []
    for i, pattern in enumerate(BACKTRACKING):
        cases.append(
            _plan_config(_config(tmp_path, f"ct{i}", LLAMA, {**CT, "ignore": [f"re:{pattern}"]}))
        )
        dynamic = {f"-:{pattern}": {}}
        gptq = {"quant_method": "gptq", "bits": 4, "dynamic": dynamic}
        cases.append(_plan_config(_config(tmp_path, f"gptq{i}", LLAMA, gptq)))
    cases.append(_plan_config(_config(tmp_path, "none", LLAMA, CT)))
    results = run_batch(cases)
    plain = _weights(results[-1])
    for r in results[:-1]:
        assert _weights(r) == plain  # naming no module changes nothing
        assert "no module" in r["stdout"], r["stdout"][-500:]


def test_a_backtracking_pattern_that_matches_counts_as_its_plain_twin(tmp_path: Path) -> None:
    nested = {**CT, "ignore": [r"re:(.*)*mlp\.experts\.1\d\.down_proj$"]}
    plain = {**CT, "ignore": [r"re:.*mlp\.experts\.1\d\.down_proj$"]}
    results = run_batch(
        [
            _plan_config(_config(tmp_path, "nested", MOE, nested)),
            _plan_config(_config(tmp_path, "plain", MOE, plain)),
            _plan_config(_config(tmp_path, "none", MOE, CT)),
        ]
    )
    assert _weights(results[0]) == _weights(results[1]) > _weights(results[2])


@pytest.mark.parametrize(
    ("name", "q", "field"),
    [
        # 100,000 substring entries over ~45,000 module names: ~4.5e9 tests before the fix
        (
            "awq",
            {
                "quant_method": "awq",
                "bits": 4,
                "modules_to_not_convert": [f"z{i}" for i in range(100_000)],
            },
            "modules_to_not_convert",
        ),
        (
            "ct-regex",
            {**CT, "ignore": [f"re:.*z{i}" for i in range(100_000)]},
            "ignore",
        ),
        (
            "gptq",
            {
                "quant_method": "gptq",
                "bits": 4,
                "dynamic": {f"-:.*z{i}": {} for i in range(100_000)},
            },
            "dynamic",
        ),
    ],
)
def test_a_list_past_the_matching_budget_is_refused(
    tmp_path: Path, name: str, q: dict, field: str
) -> None:
    path = _config(tmp_path, name, MOE, q)
    [result] = run_batch([_plan_config(path)])
    assert result["crash"] is None and result["code"] == 2, result
    lines = result["stderr"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}:"), lines
    assert f"quantization_config.{field}" in lines[0] and f"{MATCH_BUDGET:,}" in lines[0]


def test_long_lists_that_cost_little_are_taken(tmp_path: Path) -> None:
    """100,000 whole names, bitsandbytes components or regexes that fail at their first
    character are looked up, not scanned: taken, each naming nothing."""
    many = [f"x{i}" for i in range(100_000)]
    cases = [
        _plan_config(_config(tmp_path, "exact", MOE, {**CT, "ignore": many})),
        _plan_config(_config(tmp_path, "re", MOE, {**CT, "ignore": [f"re:{m}" for m in many]})),
        _plan_config(
            _config(
                tmp_path,
                "bnb",
                LLAMA,
                {
                    "quant_method": "bitsandbytes",
                    "load_in_4bit": True,
                    "llm_int8_skip_modules": many,
                },
            )
        ),
        _plan_config(
            _config(
                tmp_path,
                "awq",
                LLAMA,
                {"quant_method": "awq", "bits": 4, "modules_to_not_convert": many},
            )
        ),
    ]
    for r in run_batch(cases):
        assert r["crash"] is None and r["code"] in (0, 1), r
        assert "100000 entries name no module" in r["stdout"], r["stdout"][-300:]


def test_layers_given_by_flag_are_matched_too(tmp_path: Path) -> None:
    """The names a regex matched are looked up per model: --layers past the config's count
    matches the new layers' modules as a config of that many layers does."""
    q = {**CT, "ignore": [r"re:.*mlp\.down_proj$"]}
    short = _config(tmp_path, "short", LLAMA, q)
    long = _config(tmp_path, "long", {**LLAMA, "num_hidden_layers": 40}, q)
    results = run_batch([_plan_config(short, "--layers", "40"), _plan_config(long)])
    assert _weights(results[0]) == _weights(results[1])


@pytest.mark.parametrize("layers", ["2000000", str(2**31 - 1), str(2**80)])
@pytest.mark.parametrize("ignore", [["lm_head"], [r"re:.*down_proj"]])
def test_layers_past_any_model_with_a_list_are_refused(
    tmp_path: Path, layers: str, ignore: list
) -> None:
    """Each layer's modules are weighed against the list: 2 billion layers was a hang."""
    path = _config(tmp_path, "c", LLAMA, {**CT, "ignore": ignore})
    [result] = run_batch([_plan_config(path, "--layers", layers)])
    assert result["crash"] is None and result["code"] == 2, result
    line = result["stderr"].strip()
    assert line.startswith("error: --layers: ") and "linear modules" in line, line


def test_a_catalogue_list_with_layers_past_any_model_is_refused() -> None:
    [result] = run_batch([[*PLAN[:2], "llama-3.1-405b-fp8", *PLAN[3:], "--layers", str(2**31 - 1)]])
    assert result["crash"] is None and result["code"] == 2, result
    assert result["stderr"].startswith("error: --layers: "), result


def test_a_contract_architecture_past_any_model_with_a_list_is_located(tmp_path: Path) -> None:
    """The catalogue's Llama-3.1-405B-FP8 carries its 16-bit module list: 2^31-1 layers of it
    enumerated billions of names."""

    def mutate(data: dict) -> None:
        data["services"][0]["model"] = {
            "name": "llama-3.1-405b-instruct-fp8",
            "params": "405B",
            "quantization": "fp8",
            "architecture": {"layers": 2**31 - 1},
        }

    path = _acme_with(tmp_path, mutate)
    check, plan, _compile, simulate = run_batch(_commands(path))
    for r in (check, plan, simulate):
        assert r["crash"] is None and "linear modules" in r["stdout"] + r["stderr"], r
    assert check["code"] == 1 and "services[0].model.architecture" in check["stdout"], check
    for r in (plan, simulate):
        assert r["code"] == 2 and r["stderr"].startswith(f"error: {path}:"), r
        assert "services[0].model.architecture: layers:" in r["stderr"], r


NAMES = sorted(
    {
        f"model.layers.{layer}.{part}"
        for layer in range(12)
        for part in (
            "self_attn.q_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.gate",
            "mlp.experts.3.down_proj", "mlp.experts.10.up_proj",
        )
    }
    | {"lm_head", "model.embed_tokens", "model.norm"}
)  # fmt: skip
PATTERNS = [
    r".*mlp\.gate$", r"model\.layers\.(1[0-1])\..*", r"lm_head", r".*", r"", r"^model", r"$",
    r"(?i)MODEL\.LAYERS\.1", r"model\.layers\.\d{2}", r"[^m]", r"model.layers.[0-3]\.self",
    r".*proj$", r"(a|model)+\.", r"model\.layers\.1?\.?1", r"x*", r".*gate_?proj", r"^$",
    r"model\.layers\.(\d+)\.mlp\.experts\.\d+\.down_proj$", r"\w+\.\w+\.1$", r"\S+\s*$",
    r"model[.]layers[.][^0-5]", r"a{0}", r"(?:model|lm)_?head", r".{10,12}$", r".*?proj",
    r"model\.layers\.(?:[0-9]|1[01])\.mlp\.gate\Z", r"(?s).*experts", r"[\d.]+", r"\D{5}",
    r"model\.layers\.1[^\d]", r"(?x) model \. norm", r"(?a)\w+", r"mo{1,}del", r"m?o??del",
    r"(?i)[^a-z]", r"(?i)[^M]odel", r"(?i)[^m]", r"(?i)M[^O]", r"(?i)[M-N]ODEL\.L[^b]",
]  # fmt: skip


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_matcher_answers_as_re_match(pattern: str) -> None:
    """vLLM's re.match (a prefix match from the name's start), name by name."""
    want = sorted(n for n in NAMES if re.match(pattern, n))
    assert sorted(regex_names(pattern, trie_of(NAMES), Budget())) == want


# --- time-sliced pools -----------------------------------------------------------------------


def _acme_with(tmp_path: Path, mutate: Any) -> Path:
    data = yaml.safe_load(CONTRACT.read_text())
    mutate(data)
    home = write_scenario_home(tmp_path / "home", yaml.safe_dump(data, sort_keys=False))
    return home / "contract.yaml"


def _commands(path: Path) -> list[list[str]]:
    return [
        ["check", str(path), "--now", NOW],
        ["plan", str(path)],
        ["compile", str(path), "--now", NOW, "-o", "yaml"],
        ["simulate", str(path.parent), "--report", "-", "-o", "json"],
    ]


def _time_sliced(k: str) -> Any:
    def mutate(data: dict) -> None:
        data["pools"][2]["sharing"] = f"timeslice:{k}"  # gpu-batch
        data["services"].append(
            {
                "name": "batch-llm",
                "class": "batch",
                "tenant": "search",
                "model": {"name": "llama-3.1-8b-instruct", "params": "8B", "quantization": "bf16"},
                "gpu": {"model": "l40s"},
                "concurrency": 4,
                "contextLength": 4096,
                "replicas": {"min": 1, "max": 2},
                "coldStart": "5m",
            }
        )

    return mutate


@pytest.mark.parametrize("k", ["1025", "1000000", "9" * 30, "9" * 5000])
def test_time_slice_replicas_past_the_bound_are_located(tmp_path: Path, k: str) -> None:
    """10^6 was a twin error naming no file; past float range a traceback in plan."""
    path = _acme_with(tmp_path, _time_sliced(k))
    for command in _commands(path):
        code, _, stderr = run(*command)
        assert code == 2 and "Traceback" not in stderr, (command, stderr)
        lines = stderr.strip().splitlines()
        assert lines[0].startswith(f"error: {path}:"), (command, lines)
        assert "pools[2].sharing" in lines[0] and "at most 1024" in lines[0], lines
        assert len(lines[0]) < 300  # 5000 digits are not echoed


def test_the_bound_is_the_twin_s() -> None:
    from gpupact.cluster.devices import MAX_GPU_REPLICAS

    assert MAX_TIMESLICE_REPLICAS == MAX_GPU_REPLICAS


def test_the_most_time_slices_run_everywhere_with_a_valid_engine_budget(tmp_path: Path) -> None:
    path = _acme_with(tmp_path, _time_sliced(str(MAX_TIMESLICE_REPLICAS)))
    results = run_batch(_commands(path))
    for command, r in zip(_commands(path), results, strict=True):
        assert r["crash"] is None and r["code"] in (0, 1), (command, r)
    _, stdout, _ = run(*_commands(path)[2])
    values = re.findall(r"name: GPU_MEMORY_UTILIZATION\n\s+value: '([^']+)'", stdout)
    assert values, stdout[:2000]
    for value in values:  # vLLM's --gpu-memory-utilization: a float in (0, 1]
        assert 0 < float(value) <= 1 and abs(float(value) - 0.9 / 1024) < 1e-6, value


# --- the Volcano Job's schedule and time zone, read back by the twin ---------------------------


def _gang_scheduled(schedule: Any, zone: Any = None) -> Any:
    def mutate(data: dict) -> None:
        data["jobs"][2]["schedule"] = schedule  # lora-finetune: a Volcano gang
        if zone is not None:
            data["timeZone"] = zone

    return mutate


@pytest.mark.parametrize(
    ("schedule", "zone", "field"),
    [
        ("61 2 * * *", None, "jobs[2].schedule"),
        ("0 2 * * 8", None, "jobs[2].schedule"),
        ("CRON_TZ=Asia/Shanghai 0 2 * * *", None, "jobs[2].schedule"),
        ("0 2 * *", None, "jobs[2].schedule"),
        (5, None, "jobs[2].schedule"),
        ("0 2 * * *", "Mars/Olympus_Mons", "timeZone"),
        ("0 2 * * *", "Local", "timeZone"),
    ],
)
def test_a_volcano_job_s_bad_schedule_is_located_at_the_contract(
    tmp_path: Path, schedule: Any, zone: Any, field: str
) -> None:
    """The twin reads gpupact.io/schedule and gpupact.io/time-zone from the Job compile wrote,
    so they are the contract's fields: a bad one is refused there, for simulate as well."""
    path = _acme_with(tmp_path, _gang_scheduled(schedule, zone))
    for command in _commands(path):
        code, _, stderr = run(*command)
        assert code == 2 and "Traceback" not in stderr, (command, stderr)
        assert stderr.startswith(f"error: {path}:") and field in stderr, (command, stderr)


def test_a_volcano_job_s_good_schedule_runs_in_the_twin(tmp_path: Path) -> None:
    path = _acme_with(tmp_path, _gang_scheduled("30 8 * * *", "Asia/Shanghai"))
    code, stdout, _ = run(*_commands(path)[2])
    assert code == 0 and "gpupact.io/schedule" in stdout and "30 8 * * *" in stdout
    assert "gpupact.io/time-zone: Asia/Shanghai" in stdout
    [result] = run_batch([_commands(path)[3]])
    assert result["crash"] is None and result["code"] in (0, 1), result


def test_a_snapshot_s_volcano_job_annotations_are_not_read(tmp_path: Path) -> None:
    """A snapshot's Volcano Jobs are not job templates (the twin takes those from the
    contract): bad annotations on one change nothing."""
    path = _acme_with(tmp_path, lambda data: None)
    snap = tmp_path / "snap"
    shutil.copytree(SNAPSHOT, snap)
    controllers = json.loads((snap / "controllers.json").read_text())
    [job] = [o for o in controllers["items"] if o["apiVersion"].startswith("batch.volcano.sh")]
    job["metadata"]["annotations"] = {
        "gpupact.io/schedule": "99 99 * * *",
        "gpupact.io/time-zone": "X/../Y",
    }
    (snap / "controllers.json").write_text(json.dumps(controllers))
    args = ["simulate", str(path.parent), "--snapshot", str(snap), "--report", "-", "-o", "json"]
    [with_job] = run_batch([args])
    assert with_job["crash"] is None and with_job["code"] in (0, 1), with_job

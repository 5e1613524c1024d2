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
SNAPSHOT = ROOT / "tests/ops/fixtures/healthy"  # `kubectl get -A -o json` files of a cluster
ACME = ROOT / "examples/acme/contract.yaml"
# a Hugging Face config.json (Llama-3.1-8B's architecture fields, as transformers writes them)
MODEL_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "quantization_config": {"quant_method": "awq", "bits": 4},
}
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
    skip: frozenset[str] = frozenset()  # shapes that are good input here


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


def _in_snapshot_copy(file: str) -> Callable[[Path, str], Path]:
    """`name` becomes `file` of its own copy of the snapshot directory."""

    def place(folder: Path, name: str) -> Path:
        home = folder / name.replace(".", "-")
        shutil.copytree(SNAPSHOT, home)
        (home / file).unlink()
        return home / file

    return place


# Ten minutes of a contract's own jobs: the scenario the simulate cases run under.
TEN_MINUTES = {
    "apiVersion": "gpupact.io/v1alpha1",
    "kind": "Scenario",
    "metadata": {"name": "acme"},
    "start": "2026-11-11T08:00:00+08:00",
    "duration": "10m",
    "jobs": [{"contract": True}],
}


def write_scenario_home(home: Path, contract_text: str | None = None) -> Path:
    """`home` holding acme's contract (or `contract_text`) and TEN_MINUTES as its scenario."""
    home.mkdir(exist_ok=True)
    (home / "contract.yaml").write_text(
        ACME.read_text() if contract_text is None else contract_text
    )
    (home / SCENARIO_FILE).write_text(json.dumps(TEN_MINUTES))
    return home


def _acme_scenario(tmp: Path) -> Path:
    """Ten minutes of the acme contract: the scenario a snapshot is started under."""
    home = tmp.parent / "acme-scenario"
    return home if home.exists() else write_scenario_home(home)


def _snapshot_target(file: str, number: tuple, mapping: tuple) -> Target:
    return Target(
        lambda: json.loads((SNAPSHOT / file).read_text()),
        lambda f, tmp: [
            *("simulate", str(_acme_scenario(tmp)), "--snapshot", str(f.parent)),
            *("--report", "-", "-o", "json"),
        ],
        number,
        mapping,
        strict=False,
        place=_in_snapshot_copy(file),
        # a snapshot without that file, or with no objects in it, is a cluster without them;
        # sub-directories are not read (ops/snapshot_dir.py), whatever their names
        skip=frozenset({"missing", "empty", "only-comments", "directory"}),
    )


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
    "simulate-snapshot-pods": _snapshot_target(
        "pods.json", ("items", 0, "spec", "priority"), ("items", 0, "metadata", "labels")
    ),
    "simulate-snapshot-kueue": _snapshot_target(
        "kueue.json",
        ("items", 10, "spec", "podSets", 0, "count"),
        ("items", 3, "spec", "namespaceSelector", "matchLabels"),
    ),
    "plan-model-config": Target(
        lambda: copy.deepcopy(MODEL_CONFIG),
        lambda f, tmp: [
            "plan",
            "--model-config",
            str(f),
            "--gpu",
            "h100-80gb",
            "--concurrency",
            "4",
        ],
        ("hidden_size",),
        (),
        strict=False,
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


# --- values only one field can get wrong: the new fields' own corpus --------------------------

_DROP = object()  # the field taken out


def _with(path: tuple, value: Any) -> Callable[[Target], str]:
    def build(t: Target) -> str:
        data = t.base()
        if value is _DROP:
            node = data
            for part in path[:-1]:
                node = node[part]
            del node[path[-1]]
            return _yaml(data)
        return _yaml(_set(data, path, value))

    return build


_COLD = ("pools", 0, "coldStart")
_WINDOW = ("pools", 3, "preWarm", 1)
_CLASS = ("classes", 0)
_ARCH = ("services", 0, "model", "architecture")
_AUTOSCALER = ("autoscaler",)
_POD_SPEC = yaml.safe_load(POD.read_text())["spec"]
_PORTS = ("spec", "containers", 0, "ports")
_SPREAD = {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}


def _ported(host_port: int) -> dict:
    """The pod's container with one port, 80 in the container, `host_port` on the node."""
    container = copy.deepcopy(_POD_SPEC["containers"][0])
    container["ports"] = [{"containerPort": 80, "hostPort": host_port}]
    return container


# name: (target, what the file gets, the field path the line names, more fragments)
VALUE_CASES: dict[str, tuple[str, Callable[[Target], str], str, tuple[str, ...]]] = {
    "time-zone-folder": ("check", _with(("timeZone",), "America"), "timeZone", ("unknown",)),
    "time-zone-long": ("compile", _with(("timeZone",), "Z" * 300), "timeZone", ()),
    "time-zone-local": ("check", _with(("timeZone",), "LOCAL"), "timeZone", ("own zone",)),
    "time-zone-localtime": ("check", _with(("timeZone",), "localtime"), "timeZone", ()),
    "time-zone-path": ("check", _with(("timeZone",), "../../etc/passwd"), "timeZone", ()),
    "time-zone-number": ("check", _with(("timeZone",), 8), "timeZone", ()),
    "time-zone-null": ("check", _with(("timeZone",), None), "timeZone", ()),
    "model-cache-unknown": (
        "check",
        _with((*_COLD, "modelCache"), "disk"),
        "pools[0].coldStart.modelCache",
        (),
    ),
    "model-cache-without-load": (
        "compile",
        _with((*_COLD, "modelCache"), "node"),
        "pools[0].coldStart",
        ("cachedModelLoad",),
    ),
    "cached-load-without-cache": (
        "check",
        _with((*_COLD, "cachedModelLoad"), "1m"),
        "pools[0].coldStart",
        ("modelCache",),
    ),
    "cached-load-number": (
        "check",
        _with((*_COLD, "cachedModelLoad"), 5),
        "pools[0].coldStart.cachedModelLoad",
        (),
    ),
    "queue-wait-until-unknown": (
        "check",
        _with((*_CLASS, "maxQueueWaitUntil"), "scheduled"),
        "classes[0].maxQueueWaitUntil",
        (),
    ),
    "queue-wait-until-list": (
        "compile",
        _with((*_CLASS, "maxQueueWaitUntil"), ["bound"]),
        "classes[0].maxQueueWaitUntil",
        (),
    ),
    "pre-warm-zero-duration": (
        "compile",
        _with((*_WINDOW, "duration"), "0s"),
        "pools[3].preWarm[1]",
        ("at least 1s",),
    ),
    "pre-warm-sub-second": (
        "check",
        _with((*_WINDOW, "duration"), "500ms"),
        "pools[3].preWarm[1]",
        ("at least 1s",),
    ),
    "pre-warm-min-nodes-huge": (
        "compile",
        _with((*_WINDOW, "minNodes"), 2**40),
        "pools[3].preWarm[1].minNodes",
        (),
    ),
    "pre-warm-min-nodes-zero": (
        "check",
        _with((*_WINDOW, "minNodes"), 0),
        "pools[3].preWarm[1].minNodes",
        (),
    ),
    "pre-warm-tz-in-schedule": (
        "compile",
        _with((*_WINDOW, "schedule"), "CRON_TZ=UTC 0 18 28 * *"),
        "pools[3].preWarm[1].schedule",
        (),
    ),
    "architecture-kv-heads-not-dividing": (
        "check",
        _with(_ARCH, {"heads": 40, "kvHeads": 6}),
        "services[0].model.architecture",
        ("multiple",),
    ),
    "architecture-past-int32": (
        "compile",
        _with(_ARCH, {"layers": 2**31}),
        "services[0].model.architecture.layers",
        (),
    ),
    "architecture-experts-per-token": (
        "check",
        _with(_ARCH, {"experts": 8, "expertsPerToken": 9}),
        "services[0].model.architecture",
        (),
    ),
    "bind-latency-negative": (
        "simulate-scenario",
        _with(("bindLatency",), "-1s"),
        "bindLatency",
        (),
    ),
    "bind-latency-number": ("simulate-scenario", _with(("bindLatency",), 1), "bindLatency", ()),
    "scan-interval-zero": (
        "simulate-scenario",
        _with(_AUTOSCALER, {"scanInterval": "0s"}),
        "autoscaler.scanInterval",
        ("at least 1s",),
    ),
    "scan-interval-millisecond": (
        "simulate-scenario",
        _with(_AUTOSCALER, {"scanInterval": "1ms"}),
        "autoscaler.scanInterval",
        ("at least 1s",),
    ),
    "rps-past-float-sense": (
        "simulate-scenario",
        _with(("load", 0, "rps", 0, "value"), 1e308),
        "load[0].rps[0].value",
        ("out of range",),
    ),
    "hpa-sync-zero": (
        "simulate-scenario",
        _with(("hpa",), {"syncPeriod": "0s"}),
        "hpa.syncPeriod",
        ("at least 1s",),
    ),
    "provisioner-unknown": (
        "simulate-scenario",
        _with(_AUTOSCALER, {"provisioner": "gke-autopilot"}),
        "autoscaler.provisioner",
        (),
    ),
    "batch-idle-over-max": (
        "simulate-scenario",
        _with(_AUTOSCALER, {"batchIdleDuration": "20s", "batchMaxDuration": "10s"}),
        "autoscaler",
        ("batchIdleDuration",),
    ),
    "scale-up-delay-number": (
        "simulate-scenario",
        _with(_AUTOSCALER, {"newPodScaleUpDelay": 30}),
        "autoscaler.newPodScaleUpDelay",
        (),
    ),
    "config-zero-kv-heads": (
        "plan-model-config",
        _with(("num_key_value_heads",), 0),
        "num_key_value_heads",
        (),
    ),
    "config-heads-past-hidden": (
        "plan-model-config",
        _with(("num_attention_heads",), 8192),
        "num_attention_heads",
        ("no width",),
    ),
    "config-zero-vocab": ("plan-model-config", _with(("vocab_size",), 0), "vocab_size", ()),
    "config-no-layers": (
        "plan-model-config",
        _with(("num_hidden_layers",), _DROP),
        "num_hidden_layers",
        ("missing",),
    ),
    "config-past-int32": (
        "plan-model-config",
        _with(("num_hidden_layers",), 2**31),
        "num_hidden_layers",
        (),
    ),
    "ttft-slo-zero": (
        "check",
        _with(("services", 0, "ttftSlo"), "0s"),
        "services[0].ttftSlo",
        ("longer than 0s",),
    ),
    "pod-container-port-zero": (
        "fit-pod",
        _with(_PORTS, [{"containerPort": 0}]),
        "spec.containers[0].ports[0].containerPort",
        ("Required value",),
    ),
    "pod-host-port-past-range": (
        "fit-pod",
        _with(_PORTS, [{"containerPort": 80, "hostPort": 70000}]),
        "spec.containers[0].ports[0].hostPort",
        ("between 1 and 65535",),
    ),
    "pod-port-protocol": (
        "fit-pod",
        _with(_PORTS, [{"containerPort": 80, "protocol": "HTTP"}]),
        "spec.containers[0].ports[0].protocol",
        ("Unsupported value",),
    ),
    "pod-host-port-twice": (
        "fit-pod",
        _with(
            _PORTS, [{"containerPort": 80, "hostPort": 80}, {"containerPort": 81, "hostPort": 80}]
        ),
        "spec.containers[0].ports[1].hostPort",
        ("Duplicate value",),
    ),
    "pod-host-network-port": (
        "fit-pod",
        _with(("spec",), {**_POD_SPEC, "hostNetwork": True, "containers": [_ported(8080)]}),
        "spec.containers[0].ports[0].hostPort",
        ("hostNetwork",),
    ),
    "pod-toleration-operator": (
        "fit-pod",
        _with(("spec", "tolerations", 0, "operator"), "In"),
        "spec.tolerations[0].operator",
        (),
    ),
    "pod-spread-skew-zero": (
        "fit-pod",
        _with(("spec", "topologySpreadConstraints"), [_SPREAD]),
        "spec.topologySpreadConstraints[0].maxSkew",
        (),
    ),
    "config-dense-layers-past-layers": (
        "plan-model-config",
        _keys({"num_local_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 10**9}),
        "first_k_dense_replace",
        ("more than the 32 layers",),
    ),
    "config-experts-per-token": (
        "plan-model-config",
        _keys({"num_local_experts": 8, "num_experts_per_tok": 9}),
        "num_experts_per_tok",
        ("between 1 and the 8 experts",),
    ),
    "config-kept-list-over-int32-layers": (
        "plan-model-config",
        lambda t: _yaml(
            {
                **t.base(),
                "num_hidden_layers": 2**31 - 1,
                "quantization_config": {"quant_method": "fp8", "ignored_layers": ["lm_head"]},
            }
        ),
        "quantization_config.ignored_layers",
        ("linear modules",),
    ),
    # quantization_config's unconverted-modules lists (plan/model_config.py `_kept_entries`)
    **{
        f"config-kept-{name}": (
            "plan-model-config",
            _with(("quantization_config",), q),
            f"quantization_config.{field}",
            more,
        )
        for name, (q, field, more) in {
            "awq-string": (
                {"quant_method": "awq", "bits": 4, "modules_to_not_convert": "lm_head"},
                "modules_to_not_convert",
                ("expected a list",),
            ),
            "awq-mapping": (
                {"quant_method": "awq", "bits": 4, "modules_to_not_convert": {"a": 1}},
                "modules_to_not_convert",
                ("expected a list",),
            ),
            "ignore-ints": (
                {"quant_method": "compressed-tensors", "ignore": [1, 2]},
                "ignore",
                ("not a module name",),
            ),
            "ignore-nested": (
                {"quant_method": "compressed-tensors", "ignore": [["lm_head"]]},
                "ignore",
                ("not a module name",),
            ),
            "ignore-null": (
                {"quant_method": "compressed-tensors", "ignore": ["lm_head", None]},
                "ignore",
                ("(entry 1)",),
            ),
            "fp8-empty-name": (
                {"quant_method": "fp8", "ignored_layers": ["", "lm_head"]},
                "ignored_layers",
                ("not a module name",),
            ),
            "bnb-number": (
                {"quant_method": "bitsandbytes", "llm_int8_skip_modules": 5},
                "llm_int8_skip_modules",
                ("expected a list",),
            ),
            "fbgemm-bools": (
                {"quant_method": "fbgemm_fp8", "modules_to_not_convert": [True]},
                "modules_to_not_convert",
                ("not a module name",),
            ),
            "regex-invalid": (
                {"quant_method": "compressed-tensors", "ignore": ["re:(unclosed"]},
                "ignore",
                ("not a regular expression",),
            ),
            "regex-repeat-past-limit": (
                {"quant_method": "compressed-tensors", "ignore": ["re:a{4294967295}"]},
                "ignore",
                ("not a regular expression",),
            ),
            "regex-nested-too-deep": (
                {"quant_method": "compressed-tensors", "ignore": ["re:" + "(" * 5000 + ")" * 5000]},
                "ignore",
                ("characters)",),  # the entry is cut short, not echoed whole
            ),
            "regex-lookbehind": (
                {"quant_method": "compressed-tensors", "ignore": ["re:(?<=mlp)\\.down_proj"]},
                "ignore",
                ("lookaround",),
            ),
            "regex-backreference": (
                {"quant_method": "compressed-tensors", "ignore": ["re:(a)\\1"]},
                "ignore",
                ("back-reference",),
            ),
            "regex-expands-past-states": (
                {"quant_method": "compressed-tensors", "ignore": ["re:(a{1000}){1000}"]},
                "ignore",
                ("states",),
            ),
            "gptq-dynamic-list": (
                {"quant_method": "gptq", "bits": 4, "dynamic": ["-:lm_head"]},
                "dynamic",
                ("expected an object",),
            ),
            "gptq-dynamic-null-key": (
                {"quant_method": "gptq", "bits": 4, "dynamic": {None: {}}},
                "dynamic",
                ("key None",),
            ),
            "compressed-null-first": (
                {"quant_method": "compressed-tensors", "ignore": [None]},
                "ignore",
                ("None is not a module name (entry 0)",),
            ),
            "gptq-dynamic-int-key": (
                {"quant_method": "gptq", "bits": 4, "dynamic": {1: {}}},
                "dynamic",
                ("key",),
            ),
            "gptq-dynamic-override-number": (
                {"quant_method": "gptq", "bits": 4, "dynamic": {"+:.*mlp.*": 8}},
                "dynamic['+:.*mlp.*']",
                ("overrides",),
            ),
            "gptq-dynamic-bad-regex": (
                {"quant_method": "gptq", "bits": 4, "dynamic": {"-:*": {}}},
                "dynamic",
                ("not a regular expression",),
            ),
            "gptq-dynamic-atomic": (
                {"quant_method": "gptq_marlin", "bits": 4, "dynamic": {"-:(?>lm)_head": {}}},
                "dynamic",
                ("atomic group",),
            ),
            "awq-long-string": (
                {"quant_method": "awq", "bits": 4, "modules_to_not_convert": "x" * 100_000},
                "modules_to_not_convert",
                ("100,002 characters",),
            ),
        }.items()
    },
}


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
            if (not target.strict and shape in NON_STRICT_SKIP) or shape in target.skip:
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
            if shape in target.skip:
                continue
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
    for name, (command, build, field, more) in VALUE_CASES.items():
        target, folder = TARGETS[command], tmp / command
        path = target.place(folder, f"{name}.yaml")
        path.write_text(build(target), encoding="utf-8")
        cases[f"{command}|{name}"] = Case(target.argv(path, folder), str(path), (field, *more))
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
    if shape not in target.skip
] + [f"{command}|{name}" for name, (command, *_) in VALUE_CASES.items()]


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
    assert len(CASE_IDS) >= 400 and len(set(CASE_IDS)) == len(CASE_IDS)

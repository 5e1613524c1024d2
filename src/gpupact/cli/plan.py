"""`gpupact plan`: capacity from the request profile — for every service of a contract, or for
one model on one GPU given by flags.

Exit 0 when every service fits and meets its targets, 1 when one cannot (a finding), 2 on
bad input.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from gpupact.cli.check import contract_file
from gpupact.cli.main import EXIT_FINDINGS, EXIT_OK, Output, app, stdout, user_errors
from gpupact.cli.render import emit
from gpupact.contract import load_contract
from gpupact.contract.schema import ColdStart, Contract, Quantization, TokenProfile
from gpupact.contract.units import parse_duration, parse_params, parse_percent
from gpupact.errors import InputError
from gpupact.plan.capacity import plan_workload
from gpupact.plan.engine_flags import Engine
from gpupact.plan.engine_load import GraphSettings
from gpupact.plan.from_contract import require_known_models
from gpupact.plan.memory import EngineSettings
from gpupact.plan.planner import plan_contract
from gpupact.plan.report import contract_dict, service_dict
from gpupact.plan.standalone import standalone_workload
from gpupact.plan.workload import DEFAULT_INPUT, DEFAULT_OUTPUT, TokenStats

GIB = 2**30


@app.command("plan")
@user_errors
def plan_command(
    file: str | None = typer.Argument(None, help="Contract file: plan its services."),
    file_option: str | None = typer.Option(None, "-f", "--file", help="Contract file."),
    service: str | None = typer.Option(None, "--service", help="Plan only this service."),
    model: str | None = typer.Option(None, "--model", help="Model, e.g. llama-3.1-70b."),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU, e.g. h100-80gb."),
    params: str | None = typer.Option(
        None,
        "--params",
        help="Parameters of a model outside the catalogue (with --layers and "
        "--kv-heads), e.g. 14B.",
    ),
    model_config: str | None = typer.Option(
        None, "--model-config", help="A Hugging Face config.json describing the model."
    ),
    layers: int | None = typer.Option(None, "--layers", min=1, help="num_hidden_layers."),
    hidden: int | None = typer.Option(None, "--hidden", min=1, help="hidden_size."),
    heads: int | None = typer.Option(None, "--heads", min=1, help="num_attention_heads."),
    kv_heads: int | None = typer.Option(None, "--kv-heads", min=1, help="num_key_value_heads."),
    head_dim: int | None = typer.Option(None, "--head-dim", min=1, help="head_dim."),
    intermediate: int | None = typer.Option(
        None, "--intermediate", min=1, help="intermediate_size (the dense MLP width)."
    ),
    vocab: int | None = typer.Option(None, "--vocab", min=1, help="vocab_size."),
    experts: int | None = typer.Option(None, "--experts", min=0, help="Routed MoE experts."),
    experts_per_token: int | None = typer.Option(
        None, "--experts-per-token", min=1, help="num_experts_per_tok."
    ),
    moe_intermediate: int | None = typer.Option(
        None, "--moe-intermediate", min=1, help="moe_intermediate_size (one expert's width)."
    ),
    kv_lora_rank: int | None = typer.Option(
        None, "--kv-lora-rank", min=1, help="MLA: compressed KV width (DeepSeek: 512)."
    ),
    q_lora_rank: int | None = typer.Option(None, "--q-lora-rank", min=1, help="MLA: q_lora_rank."),
    rope_head_dim: int | None = typer.Option(
        None, "--rope-head-dim", min=1, help="MLA: qk_rope_head_dim (DeepSeek: 64)."
    ),
    quantization: str | None = typer.Option(
        None,
        "--quantization",
        help="Weights format: bf16, fp16, fp8, fp8-channel, fp8-block, "
        "int8 (w8a8), int4 (awq/gptq), nf4 (bnb-4bit). Default: the model name's, else bf16.",
    ),
    kv_cache_dtype: str | None = typer.Option(
        None,
        "--kv-cache-dtype",
        help="KV cache format: auto (the model's, bf16 if quantised), fp8, bf16, fp16.",
    ),
    engine: Engine = typer.Option(Engine.vllm, "--engine", help="Serving engine."),
    gpu_memory_utilization: float | None = typer.Option(
        None,
        "--gpu-memory-utilization",
        help="vLLM gpu_memory_utilization / SGLang "
        "mem_fraction_static / TRT-LLM free_gpu_memory_fraction (default: the engine's).",
    ),
    max_num_seqs: int | None = typer.Option(
        None, "--max-num-seqs", min=1, help="Sequences running at once (default: the engine's)."
    ),
    max_num_batched_tokens: int | None = typer.Option(
        None,
        "--max-num-batched-tokens",
        min=1,
        help="Tokens one step schedules / SGLang chunked prefill size (default: the engine's).",
    ),
    enforce_eager: bool = typer.Option(
        False, "--enforce-eager", help="No CUDA graphs (vLLM; SGLang --disable-cuda-graph)."
    ),
    cuda_graph_max_bs: int | None = typer.Option(
        None, "--cuda-graph-max-bs", min=0, help="SGLang: largest decode batch in CUDA graphs."
    ),
    gpu_memory: str | None = typer.Option(
        None,
        "--gpu-memory",
        help="Device memory as the runtime reports it, e.g. 79.2GiB "
        "(default: the GPU catalogue's).",
    ),
    context: int | None = typer.Option(
        None, "--context", min=1, help="Longest request in tokens (default: p95 in + out)."
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, help="Requests in flight at the target load."
    ),
    rate: float | None = typer.Option(
        None, "--rate", help="Requests per second at the target load (or --concurrency)."
    ),
    ttft_slo: str | None = typer.Option(None, "--ttft-slo", help="TTFT SLO at p99, e.g. 2s."),
    input_p50: int | None = typer.Option(None, "--input-p50", min=1, help="Prompt tokens, median."),
    input_p95: int | None = typer.Option(
        None, "--input-p95", min=1, help="Prompt tokens, 95th percentile."
    ),
    output_p50: int | None = typer.Option(
        None, "--output-p50", min=1, help="Completion tokens, median."
    ),
    output_p95: int | None = typer.Option(
        None, "--output-p95", min=1, help="Completion tokens, 95th percentile."
    ),
    tp: int | None = typer.Option(None, "--tp", min=1, help="Tensor parallelism (default: plan)."),
    headroom: str = typer.Option("20%", "--headroom", help="Capacity kept free."),
    gpus_per_node: int = typer.Option(8, "--gpus-per-node", min=1, help="GPUs of one node."),
    cold_start: str | None = typer.Option(
        None,
        "--cold-start",
        help="Pool cold-start phases, e.g. provision=4m,driver=2m,imagePull=3m,modelLoad=4m.",
    ),
    profiles: str | None = typer.Option(
        None,
        "--profiles",
        help="A ledger (sqlite:///FILE or postgresql://...) holding the gateway's request "
        "profiles (POST /v1/profiles): measured token percentiles replace the declared ones.",
    ),
    output: Output = typer.Option(Output.text, "-o", "--output", help="Output format."),
) -> None:
    """Plan capacity: weights and KV cache, tensor parallelism, TTFT/TPOT, replicas, GPUs,
    nodes and the pre-warm lead time of a peak."""
    slo = _seconds(ttft_slo, "--ttft-slo") if ttft_slo is not None else None
    if slo is not None and slo <= 0:  # a promise of no time at all: nothing can keep it
        raise InputError(f"--ttft-slo: must be longer than 0s, got {ttft_slo!r}")
    if file or file_option:
        given = [
            name
            for name, v in (("--model", model), ("--gpu", gpu), ("--model-config", model_config))
            if v is not None
        ]
        if given:
            raise InputError(f"{' and '.join(given)}: plan a contract or flags, not both")
        path = contract_file(file, file_option, "gpupact plan CONTRACT.yaml")
        loaded = load_contract(path)
        require_known_models(loaded)
        contract = loaded.contract
        if profiles is not None:
            contract = with_measured_tokens(contract, measured_tokens(profiles))
        data = contract_dict(plan_contract(contract, service=service, ttft_slo_s=slo))
        ok = data["ok"]
    else:
        if (model is None and model_config is None) or gpu is None:
            raise InputError(
                "give a contract file, or --model and --gpu: gpupact plan CONTRACT.yaml | "
                "gpupact plan --model llama-3.1-70b --gpu h100-80gb ..."
            )
        if service is not None:
            raise InputError("--service needs a contract file")
        measured = measured_tokens(profiles).get(model) if profiles is not None and model else None
        if measured is not None:  # flags given still win
            input_p50 = input_p50 or measured["input"]["p50"]
            input_p95 = input_p95 or measured["input"]["p95"]
            output_p50 = output_p50 or measured["output"]["p50"]
            output_p95 = output_p95 or measured["output"]["p95"]
        inputs = _tokens(input_p50, input_p95, DEFAULT_INPUT)
        outputs = _tokens(output_p50, output_p95, DEFAULT_OUTPUT)
        workload = standalone_workload(
            model=model,
            gpu=gpu,
            quantization=_format(quantization, "--quantization") if quantization else None,
            context=context or inputs.p95 + outputs.p95,
            input_tokens=inputs,
            output_tokens=outputs,
            params=_parsed(parse_params, params, "--params") if params else None,
            kv_dtype=_kv_dtype(kv_cache_dtype),
            concurrency=concurrency,
            ttft_slo_s=slo,
            headroom=_parsed(parse_percent, headroom, "--headroom"),
            tensor_parallel=tp,
            gpus_per_node=gpus_per_node,
            cold_start=_cold_start(cold_start) if cold_start else None,
            model_config=model_config,
            arch_flags={
                "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads,
                "head_dim": head_dim, "intermediate": intermediate, "vocab": vocab,
                "experts": experts, "experts_per_token": experts_per_token,
                "moe_intermediate": moe_intermediate, "kv_lora_rank": kv_lora_rank,
                "q_lora_rank": q_lora_rank, "qk_rope_head_dim": rope_head_dim,
            },
            engine=_engine(
                engine, gpu_memory_utilization, max_num_seqs, max_num_batched_tokens,
                enforce_eager, cuda_graph_max_bs,
            ),
            gpu_memory=_parsed(parse_gib, gpu_memory, "--gpu-memory") if gpu_memory else None,
        )  # fmt: skip
        if rate is not None:
            if concurrency is not None:
                raise InputError("--rate and --concurrency: give one target load")
            if not (math.isfinite(rate) and rate > 0):
                raise InputError(f"--rate: expected a positive number of requests/s, got {rate}")
            workload = replace(workload, rate=rate)
        data = {"services": [service_dict(plan_workload(workload))]}
        ok = data["services"][0]["ok"]
    if output is Output.text:
        _render_text(data)
    else:
        emit(data if "contract" in data else data["services"][0], output)
    raise typer.Exit(EXIT_OK if ok else EXIT_FINDINGS)


def measured_tokens(db: str) -> dict[str, dict[str, dict[str, int]]]:
    """Per model, the input and output token percentiles of the gateway's stored profiles
    (models without both histograms are left out)."""
    from gpupact.ledger import Ledger
    from gpupact.ledger.profiles import summarise

    with Ledger.open(db, create=False) as store:
        summaries = summarise(store.profiles())
    return {
        s["model"]: {"input": s["inputTokens"], "output": s["outputTokens"]}
        for s in summaries
        if s["inputTokens"] and s["outputTokens"]
    }


def with_measured_tokens(contract: Contract, measured: dict[str, Any]) -> Contract:
    """The contract with each service's `tokens` taken from the measured profile of its model,
    where one exists: capacity from what the gateway saw, not from the onboarding form."""
    services = []
    for s in contract.services:
        m = measured.get(s.model.name) if s.model else None
        if m is not None:
            tokens = TokenProfile.model_validate({"input": m["input"], "output": m["output"]})
            s = s.model_copy(update={"tokens": tokens})
        services.append(s)
    return contract.model_copy(update={"services": services})


def _format(text: str, flag: str) -> Quantization:
    try:
        return Quantization(text)
    except ValueError:
        known = ", ".join(q.value for q in Quantization)
        raise InputError(
            f"{flag}: unknown format {text!r} (known: {known}; aliases awq, gptq, w8a8, bnb-4bit)"
        ) from None


def _kv_dtype(text: str | None) -> Quantization | None:
    if text is None or text.strip().lower() == "auto":
        return None
    # vllm/config/cache.py CacheDType lists fp8_e5m2 beside fp8/fp8_e4m3: one byte a value too
    if text.strip().lower().replace("-", "_") == "fp8_e5m2":
        return Quantization.fp8
    fmt = _format(text, "--kv-cache-dtype")
    if fmt not in (Quantization.fp8, Quantization.bf16, Quantization.fp16, Quantization.fp32):
        raise InputError(f"--kv-cache-dtype: {text!r} is a weights format; use auto, fp8, bf16")
    return fmt


def _engine(
    engine: Engine,
    fraction: float | None,
    seqs: int | None,
    tokens: int | None,
    eager: bool = False,
    graph_bs: int | None = None,
) -> EngineSettings:
    if fraction is not None and not (math.isfinite(fraction) and 0 < fraction <= 1):
        raise InputError(f"--gpu-memory-utilization: expected a share in (0, 1], got {fraction}")
    if graph_bs == 0:
        # SGLang tests it for truth (python/sglang/srt/model_executor/cuda_graph_runner.py,
        # get_batch_sizes_to_capture: `if server_args.cuda_graph_max_bs:`), so 0 captures the
        # default sizes rather than none
        raise InputError(
            "--cuda-graph-max-bs: 0 is unset to SGLang (it captures its default batch sizes); "
            "for no CUDA graphs give --enforce-eager (SGLang's --disable-cuda-graph)"
        )
    return GraphSettings(engine, fraction, seqs, tokens, eager, graph_bs)


def parse_gib(text: str) -> int:
    """`79.2GiB` / `80Gi` / `85031714816` -> bytes (GiB is the one unit plan prints)."""
    t = text.strip()
    units = {"gib": 2**30, "gi": 2**30, "mib": 2**20, "mi": 2**20, "": 1}
    for unit, scale in units.items():
        if t.lower().endswith(unit):
            number = t[: len(t) - len(unit)] if unit else t
            try:
                value = float(number)
            except ValueError:
                break
            if not (math.isfinite(value) and value > 0):
                break
            return round(value * scale)
    raise ValueError(f"expected a size such as 79.2GiB, got {text!r}")


def _parsed(parse: Any, text: str, flag: str) -> Any:
    try:
        return parse(text)
    except ValueError as err:
        raise InputError(f"{flag}: {err}") from None


def _seconds(text: str, flag: str) -> float:
    return _parsed(parse_duration, text, flag).total_seconds()


def _tokens(p50: int | None, p95: int | None, default: tuple[int, int]) -> TokenStats:
    if p50 is None and p95 is None:
        return TokenStats(*default)
    if p50 is None:
        raise InputError("a p95 token count needs its p50 (--input-p50 / --output-p50)")
    return TokenStats(p50, p95 or p50)


def _cold_start(text: str) -> ColdStart:
    phases = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"--cold-start: expected phase=duration, got {item.strip()!r}")
        phases[key.strip()] = value.strip()
    try:
        return ColdStart.model_validate(phases)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"--cold-start: {where}: {first['msg']}") from None


# --- text ---------------------------------------------------------------------------------------


def _gb(value: int | None) -> str:
    return "-" if value is None else f"{value / GIB:,.2f} GiB"


def _s(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _render_text(data: dict[str, Any]) -> None:
    services = data["services"]
    if "contract" in data:
        _summary(data)
    for s in services:
        _service(s)
    for pool in data.get("pools", []):
        style = "red" if pool["gpus"] > pool["maxGpus"] else "green"
        stdout.print(
            f"pool {escape(pool['pool'])}: [{style}]{pool['gpus']}[/] of {pool['maxGpus']} GPUs",
            highlight=False,
        )
    for w in data.get("prewarm", []):
        lead = _duration(w["leadSeconds"])
        if w["scaleAt"]:
            when = f"start scaling at {w['scaleAt']} ({lead} before {w['start']})"
        elif w["scaleSchedule"]:
            when = f"start scaling at cron '{w['scaleSchedule']}' ({lead} before '{w['schedule']}')"
        else:
            when = f"start scaling {lead} before each '{w['schedule']}'"
        stdout.print(
            f"pool {escape(w['pool'])} pre-warm {escape(w['window'])} "
            f"({w['minNodes']} node{'' if w['minNodes'] == 1 else 's'}): "
            f"{escape(when)}",
            highlight=False,
        )
    if "contract" in data:
        count = len(data["findings"])
        verdict = f"{count} finding{'s' if count != 1 else ''}" if count else "ok"
        stdout.print(f"plan {escape(data['contract'])}: {verdict}", highlight=False)


def _load(cap: dict[str, Any]) -> str:
    if cap["concurrency"] is not None:
        return f"concurrency {cap['concurrency']} ({cap['rate']:g} req/s)"
    return f"{cap['rate']:g} req/s"


def _summary(data: dict[str, Any]) -> None:
    table = Table(title=f"plan {data['contract']}", title_justify="left", show_edge=False)
    for col in ("SERVICE", "TP", "SEQS", "REPLICAS", "GPUS", "NODES", "TTFT p99", "LEAD", ""):
        table.add_column(col, no_wrap=True)
    for s in data["services"]:
        cap = s["capacity"]
        table.add_row(
            s["service"],
            str(s["memory"]["tensorParallel"]),
            str(s["replica"]["sequences"]),
            "-" if cap["replicas"] is None else str(cap["replicas"]),
            "-" if cap["gpus"] is None else str(cap["gpus"]),
            "-" if cap["nodes"] is None else str(cap["nodes"]),
            _s(cap["ttftP99Seconds"]),
            _duration(s["prewarm"]["leadSeconds"]),
            "[green]ok[/]" if s["ok"] else "[red]finding[/]",
        )
    stdout.print(table)


def _service(s: dict[str, Any]) -> None:
    m, mem, rep, cap, pre = s["model"], s["memory"], s["replica"], s["capacity"], s["prewarm"]
    gpu, req_in, req_out = s["gpu"], s["requests"]["input"], s["requests"]["output"]
    stdout.print()
    stdout.print(
        f"[bold]{escape(s['service'])}[/]: {escape(m['name'])} {m['quantization']} "
        f"(KV {m['kvCacheDtype']}, {m['attention'].upper()}) on {escape(gpu['model'])} "
        f"{_gb(gpu['memoryBytes'])}, TP {mem['tensorParallel']} "
        f"(smallest that fits: {mem['minTensorParallel'] or 'none'})",
        highlight=False,
    )
    active = m["activeParams"]
    weights = f"{_gb(mem['weightsBytes'])} ({m['params'] / 1e9:.1f}B params"
    weights += f", {active / 1e9:.1f}B active)" if active != m["params"] else ")"
    copies = f" x{mem['kvCopies']} copies" if mem["kvCopies"] > 1 else ""
    fits = "fits" if mem["fullContextFits"] else "[red]does not fit[/]"
    lines = [
        ("weights", weights),
        (
            "usable",
            f"{_gb(mem['usableBytes'])} ({mem['engine']} {mem['utilization']:.3g} of "
            f"{mem['tensorParallel']} x {_gb(mem['deviceBytes'])}); per GPU: weights "
            f"{_gb(mem['weightsBytesPerGpu'])}, activations {_gb(mem['activationBytesPerGpu'])}, "
            f"non-torch {_gb(mem['nonTorchBytesPerGpu'])}, CUDA graphs ~"
            f"{_gb(mem['cudaGraphBytesPerGpu'])} (outside the budget)",
        ),
        (
            "KV cache",
            f"{_gb(mem['kvCacheBytes'])}: {mem['kvBytesPerToken']:,} B/token{copies}, "
            f"{mem['kvTokens']:,} tokens; a {mem['context']}-token request {fits}",
        ),
        (
            "tokens",
            f"prompt p50/p95/mean {req_in['p50']}/{req_in['p95']}/{req_in['mean']:.0f}, "
            f"completion {req_out['p50']}/{req_out['p95']}/{req_out['mean']:.0f}",
        ),
        ("sequences", f"{rep['sequences']} per replica ({rep['sequencesAtP95']} if all were p95)"),
        (
            "prefill",
            f"{rep['prefillTokensPerSecond']:,.0f} tokens/s; p50 prompt "
            f"{_s(rep['prefillP50Seconds'])}, p95 {_s(rep['prefillP95Seconds'])}",
        ),
        (
            "decode",
            f"TPOT {_s(rep['tpotSeconds'])} at a full batch "
            f"({rep['decodeTokensPerSecond']:.1f} tokens/s per sequence)",
        ),
    ]
    if cap["replicas"] is not None:
        needs = ", ".join(f"{k} {v}" for k, v in cap["replicasBy"].items())
        slo = f" (SLO {cap['ttftSloSeconds']:g}s)" if cap["ttftSloSeconds"] else ""
        lines += [
            (
                "replicas",
                f"{cap['replicas']} for {_load(cap)} with "
                f"{cap['headroomPercent']}% headroom (needs: {needs})",
            ),
            ("GPUs, nodes", f"{cap['gpus']} GPUs on {cap['nodes']} node(s)"),
            ("TTFT", f"p50 {_s(cap['ttftP50Seconds'])}, p99 {_s(cap['ttftP99Seconds'])}{slo}"),
            ("TPOT", f"p50 {_s(cap['tpotP50Seconds'])}, p99 {_s(cap['tpotP99Seconds'])}"),
        ]
    eng = s["engine"]
    if eng["saturationRate"] is not None:
        within = f", {eng['sloRate']:g} within the SLO" if cap["ttftSloSeconds"] else ""
        lines.append(
            (
                "engine",
                f"one replica saturates at {eng['saturationRate']:g} req/s{within} "
                f"(max_num_seqs {eng['maxNumSeqs']}, {eng['maxNumBatchedTokens']} tokens a "
                f"step); idle TTFT {_s(eng['idleTtftP50Seconds'])}, "
                f"TPOT {_s(eng['idleTpotP50Seconds'])}",
            )
        )
    phases = ", ".join(f"{k} {_duration(v)}" for k, v in pre["phasesSeconds"].items() if v)
    estimated = " (model load estimated)" if pre["modelLoadEstimated"] else ""
    lines.append(
        (
            "pre-warm",
            f"start scaling {_duration(pre['leadSeconds'])} before the peak: {phases}{estimated}",
        )
    )
    table = Table(show_header=False, show_edge=False, box=None, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in lines:
        table.add_row(key, value)
    stdout.print(table)
    for note in s["assumptions"]:
        stdout.print(f"  [dim]assumes: {escape(note)}[/]", highlight=False)
    for f in s["findings"]:
        stdout.print(f"  [red]finding[/] {f['code']}: {escape(f['message'])}", highlight=False)

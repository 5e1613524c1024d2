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
from gpupact.plan.planner import plan_contract
from gpupact.plan.report import contract_dict, service_dict
from gpupact.plan.standalone import standalone_workload
from gpupact.plan.workload import DEFAULT_INPUT, DEFAULT_OUTPUT, TokenStats

GB = 10**9


@app.command("plan")
@user_errors
def plan_command(
    file: str | None = typer.Argument(None, help="Contract file: plan its services."),
    file_option: str | None = typer.Option(None, "-f", "--file", help="Contract file."),
    service: str | None = typer.Option(None, "--service", help="Plan only this service."),
    model: str | None = typer.Option(None, "--model", help="Model, e.g. llama-3.1-70b."),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU, e.g. h100-80gb."),
    params: str | None = typer.Option(
        None, "--params", help="Parameters of a model outside the catalogue, e.g. 14B."
    ),
    quantization: Quantization = typer.Option(
        Quantization.fp16, "--quantization", help="Weights format."
    ),
    kv_cache_dtype: Quantization | None = typer.Option(
        None, "--kv-cache-dtype", help="KV cache format (default: the model's, bf16 if quantised)."
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
    if file or file_option:
        given = [name for name, v in (("--model", model), ("--gpu", gpu)) if v is not None]
        if given:
            raise InputError(f"{' and '.join(given)}: plan a contract or flags, not both")
        path = contract_file(file, file_option, "gpupact plan CONTRACT.yaml")
        contract = load_contract(path).contract
        if profiles is not None:
            contract = with_measured_tokens(contract, measured_tokens(profiles))
        data = contract_dict(plan_contract(contract, service=service, ttft_slo_s=slo))
        ok = data["ok"]
    else:
        if model is None or gpu is None:
            raise InputError(
                "give a contract file, or --model and --gpu: gpupact plan CONTRACT.yaml | "
                "gpupact plan --model llama-3.1-70b --gpu h100-80gb ..."
            )
        if service is not None:
            raise InputError("--service needs a contract file")
        measured = measured_tokens(profiles).get(model) if profiles is not None else None
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
            quantization=quantization,
            context=context or inputs.p95 + outputs.p95,
            input_tokens=inputs,
            output_tokens=outputs,
            params=_parsed(parse_params, params, "--params") if params else None,
            kv_dtype=kv_cache_dtype,
            concurrency=concurrency,
            ttft_slo_s=slo,
            headroom=_parsed(parse_percent, headroom, "--headroom"),
            tensor_parallel=tp,
            gpus_per_node=gpus_per_node,
            cold_start=_cold_start(cold_start) if cold_start else None,
        )
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
    return "-" if value is None else f"{value / GB:,.1f} GB"


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
            f"{_gb(mem['usableBytes'])} ({mem['utilization']:.0%} of {mem['tensorParallel']} "
            f"GPU(s)); runtime + activations {_gb(mem['overheadBytesPerGpu'])} per GPU",
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

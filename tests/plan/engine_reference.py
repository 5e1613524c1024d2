"""A plain step-by-step loop of the engine's scheduler (plan/batching.py's docstring), written
for reading, not speed: one Python list per request attribute, every step scheduled from
scratch. tests/plan/test_engine_batching.py checks the fast engine against it."""

from __future__ import annotations

import math
from collections import deque

from gpupact.plan.batching import Requests
from gpupact.plan.engine import EngineSpec
from gpupact.plan.engine_flags import Admission, sglang_fits_to_end, sglang_insert


def reference_run(spec: EngineSpec, requests: Requests) -> dict[str, object]:
    n = len(requests)
    arrival = requests.arrival.tolist()
    prompt, out = requests.input.tolist(), requests.output.tolist()
    bt = spec.block_tokens
    total = spec.kv_tokens // bt
    first, done = [math.nan] * n, [math.nan] * n
    generated, computed, blocks = [0] * n, [0] * n, [0] * n
    decoding = [False] * n  # sampled a token and still running
    running: list[int] = []
    waiting: deque[int] = deque()
    free, now, nxt, finished = total, 0.0, 0, 0
    steps = preemptions = 0
    busy = running_area = waiting_area = 0.0

    reserve = spec.admission is Admission.no_evict
    to_end = spec.admission is Admission.fits_to_end and spec.separate_prefill

    def end_states(head: int, chosen: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """SGLang's (tokens left, occupied): the candidate, the decoding sequences in
        admission order, then what this step already took, ascending in tokens left."""
        order = [head] + [i for i in running if decoding[i]] + [i for i, _ in chosen]
        states = [(out[i] - generated[i], prompt[i] + generated[i]) for i in order]
        return sorted((st for st in states if st[0] > 0), key=lambda st: st[0])

    def fits(states: list[tuple[int, int]], head: int) -> bool:
        return sglang_fits_to_end(states, free * bt - prompt[head])

    def need(i: int, take: int) -> int:
        if reserve:  # prompt and whole output, held from admission to the end
            return -(-(prompt[i] + out[i]) // bt) - blocks[i]
        return -(-(computed[i] + take) // bt) - blocks[i]

    def preempt_newest() -> None:
        nonlocal free, preemptions
        victim = running.pop()
        free += blocks[victim]
        blocks[victim] = computed[victim] = 0
        decoding[victim] = False
        waiting.appendleft(victim)
        preemptions += 1

    last_start = 0.0  # when the last step started
    while finished < n:
        # overlap_schedule: the step about to start was planned when the last one started
        seen = last_start if spec.overlap_schedule else now
        while nxt < n and arrival[nxt] <= seen:
            if prompt[nxt] + out[nxt] > total * bt:
                finished += 1  # refused: longer than the whole cache
            else:
                waiting.append(nxt)
            nxt += 1
        if not running and not waiting:
            if nxt >= n:
                break
            now = max(now, arrival[nxt])  # idle: a request is seen as it comes
            last_start = now
            continue
        budget = spec.max_num_batched_tokens
        # separate_prefill: a step of prompts alone whenever one can be formed (the partly
        # prefilled request's next chunk, else the queue's head), else of decodes alone
        prefill_only = admit = True
        if spec.separate_prefill:
            partial = [i for i in running if not decoding[i]]
            if partial:
                first_in = partial[0]
            elif waiting and len(running) < spec.max_num_seqs:
                first_in = waiting[0]
            else:
                first_in = None
            if first_in is not None:
                take = min(prompt[first_in] + generated[first_in] - computed[first_in], budget)
                prefill_only = need(first_in, take) <= free
                if prefill_only and to_end and not partial:
                    prefill_only = fits(end_states(first_in, []), first_in)
            else:
                prefill_only = False
            admit = prefill_only
        chosen: list[tuple[int, int]] = []
        states: list[tuple[int, int]] | None = None
        preempted = False
        pos = 0
        while pos < len(running) and budget > 0:
            i = running[pos]
            if spec.separate_prefill and decoding[i] == prefill_only:
                pos += 1  # not this step's kind
                continue
            take = min(prompt[i] + generated[i] - computed[i], budget)
            while need(i, take) > free and running[-1] != i:
                preempt_newest()
                preempted = True
            if need(i, take) > free:
                preempt_newest()
                preempted = True
                break
            free -= need(i, take)
            blocks[i] += need(i, take)
            budget -= take
            chosen.append((i, take))
            pos += 1
        while (
            admit and not preempted and waiting and budget > 0 and len(running) < spec.max_num_seqs
        ):
            i = waiting[0]
            take = min(prompt[i] + generated[i] - computed[i], budget)
            if need(i, take) > free:
                break
            if to_end:
                if states is None:
                    states = end_states(i, chosen)
                elif out[i] > generated[i]:
                    sglang_insert(states, (out[i] - generated[i], prompt[i] + generated[i]))
                if not fits(states, i):
                    break
            waiting.popleft()
            free -= need(i, take)
            blocks[i] += need(i, take)
            budget -= take
            running.append(i)
            chosen.append((i, take))
        if not chosen:
            continue
        tokens = sum(take for _, take in chosen)
        pairs = sum(take * computed[i] + take * (take + 1) // 2 for i, take in chosen)
        kv = sum(computed[i] for i, _ in chosen)
        seconds = spec.step_s(tokens, float(pairs), float(kv), all(decoding[i] for i, _ in chosen))
        running_area += len(running) * seconds
        waiting_area += len(waiting) * seconds
        busy += seconds
        steps += 1
        last_start = now
        now += seconds
        for i, take in chosen:
            computed[i] += take
            if computed[i] == prompt[i] + generated[i]:
                decoding[i] = True
                generated[i] += 1
                if generated[i] == 1:
                    first[i] = now
                if generated[i] >= out[i]:
                    done[i] = now
                    decoding[i] = False
                    running.remove(i)
                    free += blocks[i]
                    blocks[i] = 0
                    finished += 1
    return {
        "first": first,
        "done": done,
        "steps": steps,
        "preemptions": preemptions,
        "end": now,
        "busy": busy,
        "running_area": running_area,
        "waiting_area": waiting_area,
    }

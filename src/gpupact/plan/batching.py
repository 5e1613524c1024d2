"""One replica as a continuous-batching engine, simulated step by step (vLLM V1's scheduler).

Every step the scheduler fills a token budget (`max_num_batched_tokens`): first the running
requests in the order they were admitted (one token for a decoding sequence, the rest of its
prompt for a partly prefilled one), then new requests from the waiting queue in arrival order
(chunked prefill: a prompt larger than what is left of the budget is split over steps), never
more than `max_num_seqs` running. KV-cache blocks of `block_tokens` are allocated as tokens are
scheduled; when a running request needs a block and none is free, the newest running request
is preempted: its blocks are freed and it goes back to the head of the queue to be recomputed
(vLLM's default, RECOMPUTE), and no new request is admitted in that step. A request samples its
first token in the step that completes its prompt (TTFT) and one token per step after that.

Steps with only decodes, that nothing waiting could join, differ only by their growing context,
so they are advanced many at a time with each step's exact duration (numpy) up to the next
completion, arrival or block shortage: the result is the step-by-step loop's, only faster.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from gpupact.plan.engine import EngineSpec

FAST_PATH_MAX_STEPS = 4096  # decode steps advanced at once, bounds the arrays


@dataclass(frozen=True)
class Requests:
    arrival: np.ndarray  # seconds, non-decreasing
    input: np.ndarray  # prompt tokens (>= 1)
    output: np.ndarray  # completion tokens (>= 1)

    def __len__(self) -> int:
        return len(self.arrival)


@dataclass(frozen=True)
class EngineRun:
    requests: Requests
    first_token: np.ndarray  # seconds, per request (nan: not reached)
    finished: np.ndarray  # seconds (nan: not finished, or rejected)
    rejected: np.ndarray  # bool: larger than the whole KV cache, never runnable
    end: float  # when the run stopped
    steps: int
    preemptions: int
    busy_s: float  # time spent in steps
    running_area: float  # integral of running requests over time
    waiting_area: float  # integral of waiting requests over time

    @property
    def ttft(self) -> np.ndarray:
        return self.first_token - self.requests.arrival

    @property
    def tpot(self) -> np.ndarray:
        """Mean time per output token after the first, per finished request of > 1 token."""
        many = (self.requests.output > 1) & ~np.isnan(self.finished)
        gaps = (self.finished - self.first_token)[many]
        return gaps / (self.requests.output[many] - 1)


class _Engine:
    """The scheduler's state between steps."""

    def __init__(self, spec: EngineSpec, requests: Requests) -> None:
        n = len(requests)
        self.spec = spec
        self.req = requests
        self.prompt = requests.input.astype(np.int64)
        self.out = requests.output.astype(np.int64)
        self.first = np.full(n, np.nan)
        self.done = np.full(n, np.nan)
        self.rejected = np.zeros(n, dtype=bool)
        self.generated = np.zeros(n, dtype=np.int64)
        self.computed = np.zeros(n, dtype=np.int64)  # tokens whose KV is cached
        self.blocks = np.zeros(n, dtype=np.int64)
        self.total_blocks = spec.kv_tokens // spec.block_tokens
        self.free = self.total_blocks
        self.running: list[int] = []  # admission order: the newest is preempted first
        self.waiting: deque[int] = deque()
        self.next_arrival = 0
        self.now = 0.0
        self.steps = self.preemptions = self.finished_count = 0
        self.busy = self.running_area = self.waiting_area = 0.0
        # every running request sampled a token in the last step, none was added or
        # preempted: all of them decode next (the fast path's precondition)
        self.all_decoding = False

    # --- helpers ----------------------------------------------------------------------------

    def blocks_for(self, tokens: np.ndarray | int) -> np.ndarray | int:
        return -(-tokens // self.spec.block_tokens)

    def want(self, i: int) -> int:
        return int(self.prompt[i] + self.generated[i] - self.computed[i])

    def preempt_newest(self) -> int:
        self.all_decoding = False
        victim = self.running.pop()
        self.free += int(self.blocks[victim])
        self.blocks[victim] = 0
        self.computed[victim] = 0
        self.waiting.appendleft(victim)
        self.preemptions += 1
        return victim

    def advance(self, seconds: float, steps: int) -> None:
        self.running_area += len(self.running) * seconds
        self.waiting_area += len(self.waiting) * seconds
        self.busy += seconds
        self.steps += steps
        self.now += seconds

    def retire(self, finished: list[int]) -> None:
        if not finished:
            return
        gone = set(finished)
        self.running = [i for i in self.running if i not in gone]
        for i in finished:
            self.free += int(self.blocks[i])
            self.blocks[i] = 0
        self.finished_count += len(finished)

    # --- one scheduling decision ------------------------------------------------------------

    def schedule(self) -> tuple[np.ndarray, np.ndarray]:
        """(requests, tokens) of the next step, their blocks allocated."""
        spec = self.spec
        budget = spec.max_num_batched_tokens
        chosen: list[int] = []
        takes: list[int] = []
        if self.running:
            idx = np.fromiter(self.running, dtype=np.int64, count=len(self.running))
            want = self.prompt[idx] + self.generated[idx] - self.computed[idx]
            before = np.cumsum(want) - want  # budget used by the older requests
            take = np.minimum(np.maximum(budget - before, 0), want)
            extra = self.blocks_for(self.computed[idx] + take) - self.blocks[idx]
            extra[take == 0] = 0
            if int(extra.sum()) <= self.free:  # the usual case: no one is preempted
                on = take > 0
                self.blocks[idx] += extra
                self.free -= int(extra.sum())
                budget -= int(take.sum())
                sidx, stake = idx[on], take[on]
            elif self.schedule_preempting(chosen, takes):
                return _arrays(chosen, takes)
            else:
                sidx, stake = _arrays(chosen, takes)
                budget -= int(stake.sum())
        else:
            sidx, stake = _arrays(chosen, takes)
        admitted: list[int] = []
        admitted_takes: list[int] = []
        while self.waiting and budget > 0 and len(self.running) < spec.max_num_seqs:
            i = self.waiting[0]
            take_i = min(self.want(i), budget)
            extra_i = int(self.blocks_for(int(self.computed[i]) + take_i)) - int(self.blocks[i])
            if extra_i > self.free:
                break
            self.waiting.popleft()
            self.free -= extra_i
            self.blocks[i] += extra_i
            budget -= take_i
            self.running.append(i)
            admitted.append(i)
            admitted_takes.append(take_i)
        if admitted:
            more_idx, more_take = _arrays(admitted, admitted_takes)
            sidx = np.concatenate([sidx, more_idx])
            stake = np.concatenate([stake, more_take])
        return sidx, stake

    def schedule_preempting(self, chosen: list[int], takes: list[int]) -> bool:
        """The running requests one at a time, preempting the newest when blocks run out;
        fills `chosen`/`takes`, True when something was preempted (then nothing is admitted)."""
        budget = self.spec.max_num_batched_tokens
        preempted = False
        pos = 0
        while pos < len(self.running) and budget > 0:
            i = self.running[pos]
            take = min(self.want(i), budget)
            extra = int(self.blocks_for(int(self.computed[i]) + take)) - int(self.blocks[i])
            while extra > self.free and self.running[-1] != i:
                self.preempt_newest()
                preempted = True
            if extra > self.free:
                self.preempt_newest()  # the request itself is the newest
                preempted = True
                break
            self.free -= extra
            self.blocks[i] += extra
            budget -= take
            chosen.append(i)
            takes.append(take)
            pos += 1
        return preempted

    def step(self, sidx: np.ndarray, stake: np.ndarray) -> None:
        c = self.computed[sidx]
        pairs = float(np.dot(stake, c) + np.dot(stake, stake + 1) / 2)
        seconds = self.spec.step_s(int(stake.sum()), pairs, float(c.sum()))
        self.advance(seconds, 1)
        self.computed[sidx] = c + stake
        sampled = sidx[self.computed[sidx] == self.prompt[sidx] + self.generated[sidx]]
        self.all_decoding = len(sampled) == len(self.running)
        if not len(sampled):
            return
        self.generated[sampled] += 1
        firsts = sampled[self.generated[sampled] == 1]
        self.first[firsts] = self.now
        ending = sampled[self.generated[sampled] >= self.out[sampled]]
        if len(ending):
            self.done[ending] = self.now
            self.retire(ending.tolist())

    # --- the fast path ----------------------------------------------------------------------

    def decode_only(self) -> bool:
        """Every running request decodes this step, and nothing waiting could join."""
        spec = self.spec
        if not self.all_decoding or not self.running:
            return False
        if len(self.running) > spec.max_num_batched_tokens:
            return False
        if not self.waiting or len(self.running) >= spec.max_num_seqs:
            return True
        head = self.waiting[0]
        take = min(self.want(head), spec.max_num_batched_tokens - len(self.running))
        # blocks only get scarcer while decoding: a head that does not fit stays out
        return int(self.blocks_for(int(self.computed[head]) + take)) > self.free

    def decode_run(self) -> bool:
        """Advance k identical decode steps at once; False when not even one step fits."""
        spec = self.spec
        idx = np.fromiter(self.running, dtype=np.int64, count=len(self.running))
        batch = len(idx)
        left = self.out[idx] - self.generated[idx]
        k = min(int(left.min()), FAST_PATH_MAX_STEPS)
        computed = self.computed[idx]
        # the most steps whose new blocks fit in what is free
        have = self.blocks[idx]

        def extra(steps: int) -> int:
            return int(np.maximum(self.blocks_for(computed + steps) - have, 0).sum())

        if extra(k) > self.free:
            lo, hi = 0, k  # extra(lo) fits, extra(hi) does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if extra(mid) <= self.free else (lo, mid)
            k = lo
        if k == 0:
            return False
        base = float(computed.sum())
        arrival_due = not self.waiting and len(self.running) < spec.max_num_seqs
        arrival_due = arrival_due and self.next_arrival < len(self.req)
        if arrival_due:
            # steps only get longer as the context grows: the first step's length bounds
            # how many fit before the next arrival
            first = float(spec.decode_steps_s(batch, np.array([base + batch]), np.array([base]))[0])
            gap = float(self.req.arrival[self.next_arrival]) - self.now
            k = max(1, min(k, int(gap / first) + 1))
        s = np.arange(k, dtype=np.float64)
        durations = spec.decode_steps_s(batch, base + batch + s * batch, base + s * batch)
        ends = self.now + np.cumsum(durations)
        if arrival_due:
            t = self.req.arrival[self.next_arrival]
            j = int(np.searchsorted(ends, t, side="left"))  # first step ending at/after t
            k = min(k, j + 1)
        total = float(ends[k - 1] - self.now)
        new_blocks = np.maximum(self.blocks_for(computed + k) - have, 0)
        self.blocks[idx] += new_blocks
        self.free -= int(new_blocks.sum())
        self.computed[idx] += k
        self.generated[idx] += k
        self.advance(total, k)
        self.now = float(ends[k - 1])
        ending = left <= k
        for i, steps_left in zip(idx[ending].tolist(), left[ending].tolist(), strict=True):
            self.done[i] = float(ends[steps_left - 1])
        self.retire(idx[ending].tolist())
        return True

    # --- the loop ---------------------------------------------------------------------------

    def run(self, horizon: float) -> None:
        n = len(self.req)
        arrival = self.req.arrival
        capacity = self.total_blocks * self.spec.block_tokens
        while self.finished_count < n and self.now < horizon:
            while self.next_arrival < n and arrival[self.next_arrival] <= self.now:
                i = self.next_arrival
                self.next_arrival += 1
                if self.prompt[i] + self.out[i] > capacity:
                    # longer than the whole KV cache: vLLM refuses it (max_model_len)
                    self.rejected[i] = True
                    self.finished_count += 1
                else:
                    self.waiting.append(i)
            if not self.running and not self.waiting:
                if self.next_arrival >= n:
                    break
                self.now = float(arrival[self.next_arrival])
                continue
            if self.decode_only() and self.decode_run():
                continue
            sidx, stake = self.schedule()
            if len(sidx):
                self.step(sidx, stake)


def _arrays(chosen: list[int], takes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(chosen, dtype=np.int64), np.asarray(takes, dtype=np.int64)


def simulate(spec: EngineSpec, requests: Requests, *, horizon: float = math.inf) -> EngineRun:
    """Run `requests` through one replica until all finish (or `horizon` seconds)."""
    engine = _Engine(spec, requests)
    engine.run(horizon)
    return EngineRun(
        requests=requests,
        first_token=engine.first,
        finished=engine.done,
        rejected=engine.rejected,
        end=engine.now,
        steps=engine.steps,
        preemptions=engine.preemptions,
        busy_s=engine.busy,
        running_area=engine.running_area,
        waiting_area=engine.waiting_area,
    )

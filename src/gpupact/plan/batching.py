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

With `separate_prefill` (SGLang without --enable-mixed-chunk) a step carries prompts or
decodes, never both: whenever a prefill batch can be formed (the request part-way through its
prompt, if its next chunk's blocks are free; else the head of the queue, if the running cap and
its blocks allow), the step is that batch alone, filled from the whole budget as above, and the
decoding sequences wait for it; otherwise every decoding sequence takes its token (preempting
as above when blocks run short) and nothing is admitted (python/sglang/srt/managers/
scheduler.py, get_next_batch_to_run: "Run prefill first if possible", v0.4.0.post1).

With `overlap_schedule` (SGLang's overlap scheduler, on by default) the scheduler plans a step
while the one before it runs on the GPU: the step starting at t sees the requests that arrived
by the start of the step before (by t when the engine was idle), so a request arriving during
step j is first scheduled in step j + 2 (managers/scheduler.py, event_loop_overlap: each
iteration receives requests, schedules and launches the next batch, then waits for the
previous batch's result).

That is `Admission.recompute`, every engine's policy unless its spec says otherwise.
`Admission.fits_to_end` (SGLang serving ignore_eos requests with its radix cache off, with
`separate_prefill`) admits like it and, in addition, a waiting request only if the KV pool
holds every running request to its last token, counting what those that finish first free
(`engine_flags.sglang_fits_to_end`). Under
`Admission.no_evict` (TensorRT-LLM's default GUARANTEED_NO_EVICT, plan/engine_flags.py) a
request is admitted only when the blocks of its prompt and its whole output are free; it holds
them until it finishes, so running requests never need a block and nothing is preempted.

How it stays fast (>= 1M requests per CPU-minute, benchmarks/serving_engine.py) while taking
every decision of the step loop:
- Admission only happens when the budget is left over after every running request got all it
  wants, so only the last request admitted can be part-way through its prompt: the running
  set is the decoding sequences (oldest first) and at most one prefilling request, the newest.
- Decoding sequences all advance one token per step, so they are kept in one frame: a request's
  cached tokens are `base + D` with D the count of decode steps so far. A step moves D, not
  every sequence; the context sum is a running total, the next completion the top of a heap,
  and new KV blocks are counted from a histogram of positions within a block.
- Steps with only decodes, that nothing waiting could join, are advanced many at a time with
  each step's exact duration up to the next completion, arrival or block shortage, the clock
  summed step after step as the loop sums it.
Step durations come from `EngineSpec.step_s` / `decode_steps_s` with the same integer token
and pair counts as a plain loop would pass, so times match it to the last bit
(tests/plan/test_engine_batching.py runs a plain reference loop).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from gpupact.plan.engine import EngineSpec
from gpupact.plan.engine_flags import Admission, sglang_fits_to_end, sglang_insert

FAST_PATH_MAX_STEPS = 4096  # decode steps advanced at once, bounds the arrays
SCALAR_RUN_STEPS = 4  # decode runs up to this long are timed step by step without arrays


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
    # With `trace`: when each step in which decoding sequences took a token ended, and how
    # many took one (a streaming client's inter-token gaps, see `token_gaps`).
    decode_ends: np.ndarray | None = None
    decode_counts: np.ndarray | None = None

    @property
    def ttft(self) -> np.ndarray:
        return self.first_token - self.requests.arrival

    def token_gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """(gap, count): every inter-token gap a streaming client saw, pooled over requests
        (a benchmark's ITL, where TPOT is a per-request mean), as `count` gaps of `gap`
        seconds. A sequence that took its token in the previous decode step waited the time
        between the two steps' ends; one that just got its first token, from then. Needs a
        run with `trace`. (A recomputed request's gap across its preemption counts from its
        first token.)"""
        if self.decode_ends is None or self.decode_counts is None:
            raise ValueError("token_gaps needs simulate(..., trace=True)")
        ends, counts = self.decode_ends, self.decode_counts
        prev = np.concatenate(([0.0], ends[:-1]))
        many = (self.requests.output > 1) & ~np.isnan(self.first_token)
        firsts = self.first_token[many]
        step = np.searchsorted(ends, firsts, side="right")  # each one's first decode step
        decoded = step < len(ends)
        step, firsts = step[decoded], firsts[decoded]
        joined = np.bincount(step, minlength=len(ends))
        gaps = np.concatenate((ends - prev, ends[step] - firsts))
        weights = np.concatenate((counts - joined, np.ones(len(step), dtype=np.int64)))
        return gaps, weights

    @property
    def tpot(self) -> np.ndarray:
        """Mean time per output token after the first, per finished request of > 1 token."""
        many = (self.requests.output > 1) & ~np.isnan(self.finished)
        gaps = (self.finished - self.first_token)[many]
        return gaps / (self.requests.output[many] - 1)


class _Engine:
    """The scheduler's state between steps.

    Decoding sequences live in `dec` (request -> base, admission order): request i has cached
    `base + D` tokens and has sampled `base + D - prompt + 1`; it finishes when D reaches
    `last[i] - base`. `sp` is the one request part-way through its prompt (or None), with its
    own `computed`/`generated`; waiting and finished requests use those too."""

    def __init__(self, spec: EngineSpec, requests: Requests, trace: bool = False) -> None:
        n = len(requests)
        self.trace: list[tuple[float | np.ndarray, int]] | None = [] if trace else None
        self.spec = spec
        self.arrival = requests.arrival.tolist()
        self.prompt = requests.input.astype(np.int64).tolist()
        self.out = requests.output.astype(np.int64).tolist()
        self.first = [math.nan] * n
        self.done = [math.nan] * n
        self.rejected = np.zeros(n, dtype=bool)
        self.generated = [0] * n
        self.computed = [0] * n  # tokens whose KV is cached (outside the decode frame)
        self.bt = spec.block_tokens
        self.total_blocks = spec.kv_tokens // spec.block_tokens
        self.used = 0  # KV blocks held by running requests
        # no-evict: each request reserves its prompt and whole output when admitted
        self.reserve = spec.admission is Admission.no_evict
        self.to_end = spec.admission is Admission.fits_to_end and spec.separate_prefill
        # a request longer than the whole KV cache is refused on arrival (vLLM: max_model_len)
        self.capacity = self.total_blocks * self.bt
        self.fits = requests.input + requests.output <= self.capacity
        self.budget = spec.max_num_batched_tokens
        self.separate = spec.separate_prefill
        self.lag = spec.overlap_schedule
        self.last_start = 0.0  # when the last step started (overlap: arrivals seen up to it)
        # vLLM refuses max_num_batched_tokens < max_num_seqs (SchedulerConfig): every decoding
        # sequence gets its token in every step
        self.max_seqs = min(spec.max_num_seqs, spec.max_num_batched_tokens)
        # the decode frame
        self.D = 0
        self.dec: dict[int, int] = {}
        self.base_sum = 0
        self.ends: list[tuple[int, int]] = []  # heap of (D at which it finishes, request)
        self.hist = [0] * self.bt  # decoding sequences by base mod block_tokens
        self.sp: int | None = None
        self.waiting: deque[int] = deque()
        self.next_arrival = 0
        self.now = 0.0
        self.steps = self.preemptions = self.finished_count = 0
        self.busy = self.running_area = self.waiting_area = 0.0

    # --- the decode frame -------------------------------------------------------------------

    def join(self, i: int, computed: int) -> None:
        """Request i, which just sampled a token with `computed` tokens cached, decodes."""
        base = computed - self.D
        self.dec[i] = base
        self.base_sum += base
        self.hist[base % self.bt] += 1
        heapq.heappush(self.ends, (self.prompt[i] + self.out[i] - 1 - base, i))

    def leave(self, i: int) -> int:
        """Take request i out of the frame; its cached tokens (its generated count is set)."""
        base = self.dec.pop(i)
        self.base_sum -= base
        self.hist[base % self.bt] -= 1
        computed = base + self.D
        self.generated[i] = computed - self.prompt[i] + 1
        return computed

    def new_blocks(self, k: int) -> int:
        """KV blocks the decoding sequences take in their next k tokens: one per sequence each
        time its next token starts a block (its cached count a multiple of block_tokens);
        none when every request reserved its blocks at admission."""
        if self.reserve:
            return 0
        bt, hist, d = self.bt, self.hist, self.D
        full, rest = divmod(k, bt)
        blocks = full * len(self.dec)
        for s in range(rest):
            blocks += hist[(-d - s) % bt]
        return blocks

    def finish_decoders(self) -> None:
        """Retire the decoding sequences whose last token was sampled at D."""
        ends, dec, d = self.ends, self.dec, self.D
        while ends and ends[0][0] <= d:
            at, i = heapq.heappop(ends)
            base = dec.get(i)
            if base is None or self.prompt[i] + self.out[i] - 1 - base != at:
                continue  # preempted since (a stale entry)
            computed = self.leave(i)
            self.used -= self.held(i, computed)
            self.done[i] = self.now
            self.finished_count += 1

    def blocks_of(self, tokens: int) -> int:
        return -(-tokens // self.bt)

    def held(self, i: int, computed: int) -> int:
        """KV blocks request i holds with `computed` tokens cached."""
        if self.reserve:
            return self.blocks_of(self.prompt[i] + self.out[i])
        return self.blocks_of(computed)

    def admit_blocks(self, i: int, computed: int, take: int) -> int:
        """Blocks a waiting request i needs to have `take` more tokens computed."""
        if self.reserve:
            return self.blocks_of(self.prompt[i] + self.out[i])  # computed is 0: no preemption
        return self.blocks_of(computed + take) - self.blocks_of(computed)

    # --- one step ---------------------------------------------------------------------------

    def preempt_newest(self) -> None:
        if self.sp is not None:
            victim = self.sp
            self.sp = None
            computed = self.computed[victim]
        else:
            victim = next(reversed(self.dec))
            computed = self.leave(victim)
        self.used -= self.blocks_of(computed)
        self.computed[victim] = 0
        self.waiting.appendleft(victim)
        self.preemptions += 1

    def schedule_preempting(self) -> int:
        """The running requests in admission order, each decoding sequence needing a block
        when its next token starts one, preempting the newest while blocks are short; then
        the prefilling request (the newest), preempting itself if its chunk does not fit.
        Allocates the blocks of what is left running (nothing is admitted after this); the
        prefilling request's chunk (0: none, or it was preempted)."""
        order = list(self.dec)
        d, bt = self.D, self.bt
        taken = 0  # blocks the decoders placed so far take
        pos = 0
        while pos < len(self.dec):
            i = order[pos]
            extra = 1 if (self.dec[i] + d) % bt == 0 else 0
            while extra > self.total_blocks - self.used - taken and (
                self.sp is not None or order[len(self.dec) - 1] != i
            ):
                self.preempt_newest()
            if extra > self.total_blocks - self.used - taken:
                self.preempt_newest()  # the request itself is the newest
                break
            taken += extra
            pos += 1
        self.used += taken
        sp = self.sp
        budget = self.budget - len(self.dec)
        if sp is not None and budget > 0 and not self.separate:
            c = self.computed[sp]
            take = min(self.prompt[sp] + self.generated[sp] - c, budget)
            need = self.blocks_of(c + take) - self.blocks_of(c)
            if need > self.total_blocks - self.used:
                self.preempt_newest()
            else:
                self.used += need
                return take
        return 0

    def prefill_ready(self) -> bool:
        """A prefill batch can be formed (`separate_prefill`): the request part-way through
        its prompt with its next chunk's blocks free, else the queue's head within the running
        cap and with its blocks free."""
        free = self.total_blocks - self.used
        sp = self.sp
        if sp is not None:
            c = self.computed[sp]
            take = min(self.prompt[sp] + self.generated[sp] - c, self.budget)
            return self.reserve or self.blocks_of(c + take) - self.blocks_of(c) <= free
        if not self.waiting or len(self.dec) >= self.max_seqs:
            return False
        head = self.waiting[0]
        c = self.computed[head]
        take = min(self.prompt[head] + self.generated[head] - c, self.budget)
        if self.admit_blocks(head, c, take) > free:
            return False
        return not self.to_end or self.fits_to_end(self.end_states(None, head), head)

    def end_states(self, sp: int | None, head: int) -> list[tuple[int, int]]:
        """(tokens left, tokens occupied) of `head`, the decoding sequences (admission order)
        and `sp` (when in this step), ascending in tokens left, as SGLang orders them."""
        gen, out, prompt, d = self.generated, self.out, self.prompt, self.D
        states = [(out[head] - gen[head], prompt[head] + gen[head])]
        for i, base in self.dec.items():
            states.append((prompt[i] + out[i] - 1 - base - d, base + d + 1))
        if sp is not None:
            states.append((out[sp] - gen[sp], prompt[sp] + gen[sp]))
        states = [st for st in states if st[0] > 0]
        states.sort(key=lambda st: st[0])
        return states

    def fits_to_end(self, states: list[tuple[int, int]], head: int) -> bool:
        free = (self.total_blocks - self.used) * self.bt - self.prompt[head]
        return sglang_fits_to_end(states, free)

    def step_once(self) -> None:
        """One step of the scheduler and the forward pass it runs."""
        computed, generated, prompt = self.computed, self.generated, self.prompt
        held = len(self.dec)  # decoding sequences, running whether or not they step
        prefill_only = self.separate and self.prefill_ready()
        n = 0 if prefill_only else held  # those that take a token this step
        budget = self.budget - n
        extra = self.new_blocks(1) if n else 0
        sp = self.sp
        sp_take = sp_extra = 0
        if sp is not None and budget > 0 and (prefill_only or not self.separate):
            c = computed[sp]
            sp_take = min(prompt[sp] + generated[sp] - c, budget)
            if not self.reserve:
                sp_extra = self.blocks_of(c + sp_take) - self.blocks_of(c)
        admitted: list[tuple[int, int]] = []
        if extra + sp_extra <= self.total_blocks - self.used:
            self.used += extra + sp_extra
            budget -= sp_take
            running = held + (sp is not None)
            admit = prefill_only or not self.separate
            states: list[tuple[int, int]] | None = None
            while admit and self.waiting and budget > 0 and running < self.max_seqs:
                i = self.waiting[0]
                c = computed[i]
                take = min(prompt[i] + generated[i] - c, budget)
                need = self.admit_blocks(i, c, take)
                if need > self.total_blocks - self.used:
                    break
                if self.to_end:
                    if states is None:
                        states = self.end_states(sp if sp_take else None, i)
                    elif self.out[i] > generated[i]:
                        sglang_insert(
                            states, (self.out[i] - generated[i], prompt[i] + generated[i])
                        )
                    if not self.fits_to_end(states, i):
                        break
                self.waiting.popleft()
                self.used += need
                budget -= take
                running += 1
                admitted.append((i, take))
        else:
            sp_take = self.schedule_preempting()  # (never in a prefill-only step: it fits)
            n = held = len(self.dec)
            sp = self.sp
        # the forward pass over what was scheduled
        kv = self.base_sum + n * self.D if n else 0  # the stepping decoders' cached tokens
        tokens, pairs = n, kv + n
        if sp_take:
            c = computed[sp]
            tokens += sp_take
            pairs += sp_take * c + sp_take * (sp_take + 1) // 2
            kv += c
        for i, take in admitted:
            c = computed[i]
            tokens += take
            pairs += take * c + take * (take + 1) // 2
            kv += c
        if tokens == 0:
            return
        seconds = self.spec.step_s(tokens, float(pairs), float(kv), tokens == n)
        running = held + (sp is not None) + len(admitted)
        self.running_area += running * seconds
        self.waiting_area += len(self.waiting) * seconds
        self.busy += seconds
        self.steps += 1
        self.last_start = self.now
        self.now += seconds
        if n and self.trace is not None:
            self.trace.append((self.now, n))
        if n:
            self.D += 1
            self.finish_decoders()
        if sp is not None:
            self.sp = None
            self.place(sp, sp_take)
        for i, take in admitted:
            self.place(i, take)

    def place(self, i: int, take: int) -> None:
        """After a step in which request i (not decoding) had `take` tokens computed."""
        c = self.computed[i] + take
        self.computed[i] = c
        g = self.generated[i]
        if c != self.prompt[i] + g:
            self.sp = i  # still prefilling (only the newest can be)
            return
        g += 1
        self.generated[i] = g
        if g == 1:
            self.first[i] = self.now
        if g >= self.out[i]:
            self.done[i] = self.now
            self.used -= self.held(i, c)
            self.finished_count += 1
        else:
            self.join(i, c)

    # --- the fast path ----------------------------------------------------------------------

    def decode_only(self) -> bool:
        """Every running request decodes this step, and nothing waiting could join."""
        n = len(self.dec)
        if self.sp is not None or not n:
            return False
        if self.separate:
            return not self.prefill_ready()
        if not self.waiting or n >= self.max_seqs:
            return True
        head = self.waiting[0]
        c = self.computed[head]
        take = min(self.prompt[head] + self.generated[head] - c, self.budget - n)
        # blocks only get scarcer while decoding: a head that does not fit stays out
        return self.admit_blocks(head, c, take) > self.total_blocks - self.used

    def decode_run(self) -> bool:
        """Advance k identical decode steps at once; False when not even one step fits."""
        spec, n, d = self.spec, len(self.dec), self.D
        k = min(self.ends[0][0] - d, FAST_PATH_MAX_STEPS)  # stale heap tops only lower it
        free = self.total_blocks - self.used
        if self.new_blocks(k) > free:
            lo, hi = 0, k  # new_blocks(lo) fits, new_blocks(hi) does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if self.new_blocks(mid) <= free else (lo, mid)
            k = lo
        if k == 0:
            return False
        if self.to_end and self.waiting:
            k = 1  # whether the head fits to the end changes as the batch decodes
        kv = self.base_sum + n * d
        arrival = math.inf
        if not self.waiting and n < self.max_seqs and self.next_arrival < len(self.arrival):
            arrival = self.arrival[self.next_arrival]
            # steps only get longer as the context grows: the first step's length bounds
            # how many fit before the next arrival
            first = spec.step_s(n, float(kv + n), float(kv), True)
            if arrival <= self.now:  # overlap: arrived during the last step, seen after one
                k = 1
            else:  # overlap: seen one step later than it comes
                k = max(1, min(k, int((arrival - self.now) / first) + 1 + self.lag))
        now = self.now
        if k <= SCALAR_RUN_STEPS:
            ends: list[float] | np.ndarray = []
            for s in range(k):
                base = kv + s * n
                start = now
                now += spec.step_s(n, float(base + n), float(base), True)
                ends.append(now)
                if (start if self.lag else now) >= arrival:
                    break
            k = len(ends)
        else:
            reads = kv + n * np.arange(k, dtype=np.int64)
            durations = spec.decode_steps_s(n, (reads + n).astype(np.float64), reads + 0.0)
            ends = np.cumsum(np.concatenate(([self.now], durations)))[1:]  # summed as the loop
            if arrival < math.inf:
                k = min(k, int(np.searchsorted(ends, arrival, side="left")) + 1 + self.lag)
            now = float(ends[k - 1])
        seconds = now - self.now
        self.running_area += n * seconds
        self.waiting_area += len(self.waiting) * seconds + self.joined_waiting(ends, k, now)
        self.busy += seconds
        self.steps += k
        self.used += self.new_blocks(k)
        self.last_start = float(ends[k - 2]) if k >= 2 else self.now
        self.now = now
        if self.trace is not None:
            self.trace.append((np.asarray(ends[:k], dtype=np.float64), n))
        self.D += k
        self.finish_decoders()
        return True

    def joined_waiting(self, ends: list[float] | np.ndarray, k: int, end: float) -> float:
        """Waiting time, up to `end`, of the requests that arrived during a decode run that
        did not stop for them: each joins the queue when the step it arrived in ends (with
        `overlap_schedule`, when the step after it ends; one that came before the run, during
        the step before it, when the run's first step ends)."""
        first, arrival = self.next_arrival, self.arrival
        last = bisect.bisect_right(arrival, end, first)
        if last == first:
            return 0.0
        at = np.asarray(arrival[first:last])
        steps = np.asarray(ends[:k])
        fits = self.fits[first:last]
        if not self.lag:
            joined = steps[np.searchsorted(steps, at, side="left")]
            return float(np.sum((end - joined)[fits]))
        starts = np.concatenate(([self.now], steps[:-1]))
        step = np.searchsorted(starts, at, side="left")
        inside = fits & (step < k)
        return float(np.sum(end - steps[step[inside]]))

    # --- the loop ---------------------------------------------------------------------------

    def run(self, horizon: float) -> None:
        n = len(self.arrival)
        arrival = self.arrival
        capacity = self.capacity
        prompt, out = self.prompt, self.out
        while self.finished_count < n and self.now < horizon:
            seen = self.last_start if self.lag else self.now
            while self.next_arrival < n and arrival[self.next_arrival] <= seen:
                i = self.next_arrival
                self.next_arrival += 1
                if prompt[i] + out[i] > capacity:
                    self.rejected[i] = True
                    self.finished_count += 1
                else:
                    self.waiting.append(i)
            if not self.dec and self.sp is None and not self.waiting:
                if self.next_arrival >= n:
                    break
                # idle, the scheduler sees a request as it comes
                self.now = max(self.now, float(arrival[self.next_arrival]))
                self.last_start = self.now
                continue
            if self.decode_only() and self.decode_run():
                continue
            self.step_once()


def simulate(
    spec: EngineSpec, requests: Requests, *, horizon: float = math.inf, trace: bool = False
) -> EngineRun:
    """Run `requests` through one replica until all finish (or `horizon` seconds); `trace`
    keeps the decode steps' ends (`EngineRun.token_gaps`)."""
    engine = _Engine(spec, requests, trace)
    engine.run(horizon)
    ends = counts = None
    if engine.trace is not None:
        parts = [np.atleast_1d(np.asarray(e, dtype=np.float64)) for e, _ in engine.trace]
        ends = np.concatenate(parts) if parts else np.zeros(0)
        counts = np.concatenate(
            [
                np.full(len(p), c, dtype=np.int64)
                for p, (_, c) in zip(parts, engine.trace, strict=True)
            ]
            or [np.zeros(0, dtype=np.int64)]
        )
    return EngineRun(
        requests=requests,
        first_token=np.array(engine.first, dtype=np.float64),
        finished=np.array(engine.done, dtype=np.float64),
        rejected=engine.rejected,
        end=engine.now,
        steps=engine.steps,
        preemptions=engine.preemptions,
        busy_s=engine.busy,
        running_area=engine.running_area,
        waiting_area=engine.waiting_area,
        decode_ends=ends,
        decode_counts=counts,
    )

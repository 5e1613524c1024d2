"""Framework status of a filter or score (kube-scheduler `fwk.Status`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Code(StrEnum):
    SUCCESS = "Success"
    ERROR = "Error"
    UNSCHEDULABLE = "Unschedulable"
    # preemption on this node would not help: the scheduler does not try it
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)


SUCCESS = Status()

# framework.MaxNodeScore: every score plugin's result is on 0..MAX_NODE_SCORE
MAX_NODE_SCORE = 100

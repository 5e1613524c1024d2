"""PodDisruptionBudgets as preemption reads them (policy/v1), and which victims violate them.

Facts from upstream `filterPodsWithPDBViolation`:
- A budget covers a pod when it is in the pod's namespace and its selector matches the pod's
  labels. A missing or empty selector covers nothing; a pod without labels is covered by none.
- `status.disruptionsAllowed` is spent one pod at a time in the order the victims are given
  (most important first); a pod whose eviction takes a budget below zero violates it.
- A pod listed in `status.disruptedPods` is already being evicted through the API server: it
  neither spends the budget nor violates it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupact.errors import FieldError, PathPart
from gpupact.kube.objects import Pod
from gpupact.kube.selectors import LabelSelector, parse_label_selector


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: str
    selector: LabelSelector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()  # pod names (the budget's own namespace)
    name: str = ""

    def covers(self, pod: Pod) -> bool:
        if pod.namespace != self.namespace or not pod.labels:
            return False
        selector = self.selector
        if selector is None or not (selector.match_labels or selector.match_expressions):
            return False  # nil or empty selector: matches nothing
        return selector.matches(pod.labels)


def _mapping(obj: Any, path: tuple[PathPart, ...]) -> Mapping[str, Any]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise FieldError(path, f"expected an object, got {type(obj).__name__}")
    return obj


def parse_pdb(obj: Any, path: Sequence[PathPart] = ()) -> PodDisruptionBudget:
    """A policy/v1 PodDisruptionBudget from its JSON/YAML form (`kubectl get pdb -o json`).
    A missing namespace is "default", as for pods."""
    path = tuple(path)
    body = _mapping(obj, path)
    kind = body.get("kind")
    if kind is not None and kind != "PodDisruptionBudget":
        raise FieldError((*path, "kind"), f"expected kind PodDisruptionBudget, got {kind!r}")
    meta = _mapping(body.get("metadata"), (*path, "metadata"))
    spec = _mapping(body.get("spec"), (*path, "spec"))
    status = _mapping(body.get("status"), (*path, "status"))

    namespace = meta.get("namespace") or "default"
    name = meta.get("name") or ""
    for key, value in (("namespace", namespace), ("name", name)):
        if not isinstance(value, str):
            raise FieldError((*path, "metadata", key), f"expected a string, got {value!r}")

    allowed = status.get("disruptionsAllowed", 0)
    if isinstance(allowed, bool) or not isinstance(allowed, int):
        raise FieldError(
            (*path, "status", "disruptionsAllowed"), f"expected an integer, got {allowed!r}"
        )
    disrupted = _mapping(status.get("disruptedPods"), (*path, "status", "disruptedPods"))
    return PodDisruptionBudget(
        namespace=namespace,
        selector=parse_label_selector(spec.get("selector"), (*path, "spec", "selector")),
        disruptions_allowed=allowed,
        disrupted_pods=frozenset(str(k) for k in disrupted),
        name=name,
    )


@dataclass(slots=True)
class BudgetLedger:
    """The budgets' remaining disruptions while victims are walked one by one."""

    pdbs: Sequence[PodDisruptionBudget]
    allowed: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.allowed = [pdb.disruptions_allowed for pdb in self.pdbs]

    def evict(self, pod: Pod) -> bool:
        """Spend the budgets covering `pod`; True when one of them goes below zero."""
        violated = False
        for i, pdb in enumerate(self.pdbs):
            if not pdb.covers(pod) or pod.name in pdb.disrupted_pods:
                continue
            self.allowed[i] -= 1
            if self.allowed[i] < 0:
                violated = True
        return violated


def pods_violating_pdbs(pods: Iterable[Pod], pdbs: Sequence[PodDisruptionBudget]) -> list[bool]:
    """For each pod in order: would evicting it (after the ones before it) violate a budget?"""
    ledger = BudgetLedger(pdbs)
    return [ledger.evict(pod) for pod in pods]


def filter_pods_with_pdb_violation(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """(violating, non-violating), each keeping the given order."""
    flags = pods_violating_pdbs(pods, pdbs)
    violating = [p for p, bad in zip(pods, flags, strict=True) if bad]
    non_violating = [p for p, bad in zip(pods, flags, strict=True) if not bad]
    return violating, non_violating

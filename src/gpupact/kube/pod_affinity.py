"""Inter-pod affinity and anti-affinity terms of a Pod (`spec.affinity.podAffinity` /
`podAntiAffinity`), read once into typed terms the scheduler matches without re-parsing.

Upstream semantics (core/v1 PodAffinityTerm, the API server's validation and its merge of
matchLabelKeys / mismatchLabelKeys, the scheduler framework's AffinityTerm):

- A term selects a pod when the pod's namespace is in `namespaces` or the `namespaceSelector`
  selects the pod's namespace labels, and the `labelSelector` selects the pod's labels. A
  missing labelSelector selects no pod, `{}` every pod; a missing namespaceSelector selects no
  namespace, `{}` every namespace. With neither `namespaces` nor `namespaceSelector` the term
  means the owning pod's own namespace (resolved here, at parse time).
- `matchLabelKeys` / `mismatchLabelKeys` become `key in (v)` / `key notin (v)` requirements of
  the labelSelector, v being the owning pod's value of that label (keys the pod lacks are
  ignored), as the API server merges them at pod creation. A snapshot read back from the API
  server already carries the merged requirements; merging again adds nothing.
- Validation (FieldError, path relative to the affinity object): topologyKey required and a
  valid label key; namespaces are namespace names; the selectors are valid label selectors;
  the label-key lists need a labelSelector, hold valid label keys, share no key, and a
  matchLabelKeys key is not also constrained by the user's labelSelector; preferred weights
  are 1..100.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpupact.errors import FieldError, PathPart
from gpupact.kube.fields import integer, optional_list, optional_mapping, string, string_list
from gpupact.kube.selectors import IN, NOT_IN, LabelSelector, Requirement, parse_label_selector
from gpupact.kube.validation import check_label_key, invalid_issue

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
MIN_WEIGHT, MAX_WEIGHT = 1, 100

_FORBIDDEN_WITHOUT_SELECTOR = "Forbidden: must not be specified when labelSelector is not set"
_BOTH_KEY_LISTS = "exists in both matchLabelKeys and mismatchLabelKeys"
_KEY_AND_SELECTOR = "exists in both matchLabelKeys and labelSelector"
_NAMESPACE_MAX_BYTES = 63
_DNS1123_LABEL_RE = re.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One term with its selectors compiled; `selector` has the label-key lists merged in."""

    topology_key: str
    selector: LabelSelector | None  # None: selects no pod
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None = None  # None: selects no namespace

    def matches(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]
    ) -> bool:
        """Does the term select a pod of `namespace` with `labels` (its namespace carrying
        `namespace_labels`)?"""
        if namespace not in self.namespaces and (
            self.namespace_selector is None or not self.namespace_selector.matches(namespace_labels)
        ):
            return False
        return self.selector is not None and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    term: PodAffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """podAffinity or podAntiAffinity (the same shape): hard terms and weighted soft terms."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


def pod_affinity_term(
    topology_key: str,
    selector: LabelSelector | None,
    namespaces: Sequence[str] = (),
    namespace_selector: LabelSelector | None = None,
    *,
    owner_namespace: str = "default",
) -> PodAffinityTerm:
    """A term built in code, with the upstream default: no namespaces and no namespace
    selector mean the owning pod's namespace."""
    if not namespaces and namespace_selector is None:
        namespaces = (owner_namespace,)
    return PodAffinityTerm(topology_key, selector, frozenset(namespaces), namespace_selector)


# --- parsing -----------------------------------------------------------------------------------


def _check_namespace(name: str, path: tuple[PathPart, ...]) -> None:
    if len(name.encode()) > _NAMESPACE_MAX_BYTES or not _DNS1123_LABEL_RE.fullmatch(name):
        detail = (
            "a namespace name must be a lowercase RFC 1123 label of at most 63 characters "
            "(alphanumerics or '-', starting and ending with an alphanumeric)"
        )
        raise invalid_issue(path, name, detail).as_error()


def _user_constrained_keys(selector: LabelSelector, owner_labels: Mapping[str, str]) -> set[str]:
    """Keys the user's labelSelector constrains, leaving out requirements that are exactly a
    merged matchLabelKeys entry (`key in (owner's value)`), which a stored pod carries."""
    keys = {key for key, _ in selector.match_labels}
    for req in selector.match_expressions:
        merged = req.operator == IN and req.values == (owner_labels.get(req.key),)
        if not merged:
            keys.add(req.key)
    return keys


def _label_keys(
    body: Mapping[str, Any], name: str, has_selector: bool, path: tuple[PathPart, ...]
) -> tuple[str, ...]:
    keys = string_list(body.get(name), (*path, name)) or ()
    if keys and not has_selector:
        raise FieldError((*path, name), _FORBIDDEN_WITHOUT_SELECTOR)
    for i, key in enumerate(keys):
        check_label_key(key, (*path, name, i))
    return keys


def parse_pod_affinity_term(
    obj: Any,
    owner_namespace: str,
    owner_labels: Mapping[str, str],
    path: Sequence[PathPart] = (),
) -> PodAffinityTerm:
    """A v1 PodAffinityTerm of a pod in `owner_namespace` labelled `owner_labels`."""
    path = tuple(path)
    body = optional_mapping(obj, path)
    topology_key = string(body.get("topologyKey"), (*path, "topologyKey"))
    if not topology_key:
        raise FieldError((*path, "topologyKey"), "Required value: can not be empty")
    check_label_key(topology_key, (*path, "topologyKey"))
    selector = parse_label_selector(body.get("labelSelector"), (*path, "labelSelector"))
    namespaces = string_list(body.get("namespaces"), (*path, "namespaces")) or ()
    for i, name in enumerate(namespaces):
        _check_namespace(name, (*path, "namespaces", i))
    namespace_selector = parse_label_selector(
        body.get("namespaceSelector"), (*path, "namespaceSelector")
    )
    has_selector = selector is not None
    match_keys = _label_keys(body, "matchLabelKeys", has_selector, path)
    mismatch_keys = _label_keys(body, "mismatchLabelKeys", has_selector, path)
    mismatch_set = set(mismatch_keys)
    for i, key in enumerate(match_keys):
        if key in mismatch_set:
            raise invalid_issue((*path, "matchLabelKeys", i), key, _BOTH_KEY_LISTS).as_error()
    if selector is not None and match_keys:
        constrained = _user_constrained_keys(selector, owner_labels)
        for i, key in enumerate(match_keys):
            if key in constrained:
                raise invalid_issue((*path, "matchLabelKeys", i), key, _KEY_AND_SELECTOR).as_error()
    if selector is not None:
        selector = _merge_label_keys(selector, match_keys, mismatch_keys, owner_labels)
    return pod_affinity_term(
        topology_key,
        selector,
        namespaces,
        namespace_selector,
        owner_namespace=owner_namespace,
    )


def _merge_label_keys(
    selector: LabelSelector,
    match_keys: Sequence[str],
    mismatch_keys: Sequence[str],
    owner_labels: Mapping[str, str],
) -> LabelSelector:
    present = set(selector.match_expressions)
    extra: list[Requirement] = []
    for keys, operator in ((match_keys, IN), (mismatch_keys, NOT_IN)):
        for key in keys:
            value = owner_labels.get(key)
            if value is None:
                continue
            req = Requirement(key, operator, (value,))
            if req not in present:
                present.add(req)
                extra.append(req)
    if not extra:
        return selector
    return LabelSelector(selector.match_labels, (*selector.match_expressions, *extra))


def _parse_weighted(
    obj: Any, owner_namespace: str, owner_labels: Mapping[str, str], path: tuple[PathPart, ...]
) -> tuple[WeightedPodAffinityTerm, ...]:
    out = []
    for i, item in enumerate(optional_list(obj, path)):
        body = optional_mapping(item, (*path, i))
        weight = integer(body.get("weight"), (*path, i, "weight"))
        if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
            raise invalid_issue(
                (*path, i, "weight"), weight, f"must be in the range {MIN_WEIGHT}-{MAX_WEIGHT}"
            ).as_error()
        term_path = (*path, i, "podAffinityTerm")
        term = parse_pod_affinity_term(
            body.get("podAffinityTerm"), owner_namespace, owner_labels, term_path
        )
        out.append(WeightedPodAffinityTerm(term, weight))
    return tuple(out)


def parse_pod_affinity(
    obj: Any,
    owner_namespace: str,
    owner_labels: Mapping[str, str],
    path: Sequence[PathPart] = (),
) -> PodAffinity | None:
    """A v1 PodAffinity or PodAntiAffinity object; None when it holds no term."""
    path = tuple(path)
    body = optional_mapping(obj, path)
    required = tuple(
        parse_pod_affinity_term(term, owner_namespace, owner_labels, (*path, REQUIRED, i))
        for i, term in enumerate(optional_list(body.get(REQUIRED), (*path, REQUIRED)))
    )
    preferred = _parse_weighted(
        body.get(PREFERRED), owner_namespace, owner_labels, (*path, PREFERRED)
    )
    if not required and not preferred:
        return None
    return PodAffinity(required, preferred)

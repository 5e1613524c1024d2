"""Does the preemptor fit on a node once some pods are gone? (the dry run's only question)

Preemption asks this for every candidate node, first with all potential victims removed, then
once per victim it tries to keep. `FitCheck` is that question as a callback, so the engine can
answer it with its vectorised state; `FilterChainFit` answers it with the whole scalar filter
chain (`engine.placement.framework.filter_node`), the reference every faster check must agree
with.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from gpupact.cluster.devices import NodeDevices
from gpupact.cluster.state import pod_usage
from gpupact.engine.placement.framework import ClusterView, affinity_prefilter, filter_node
from gpupact.engine.placement.plugins import inter_pod_affinity as ipa
from gpupact.engine.placement.plugins import volumes as vol
from gpupact.kube import host_ports as hp
from gpupact.kube import topology_spread as pts
from gpupact.kube.objects import Node, Pod
from gpupact.kube.requests import NodeResources, PodFootprint
from gpupact.kube.status import Status

if TYPE_CHECKING:
    from gpupact.cluster.state import ClusterState


class FitCheck(Protocol):
    def __call__(self, pod: Pod, node: Node, removed: Collection[Pod]) -> Status:
        """The filter verdict for `pod` on `node` as if the `removed` pods (distinct, by key;
        on this node or, for gang victims, elsewhere) were not running."""
        ...


class FilterChainFit:
    """FitCheck over the default filter chain with the removed pods taken out of every
    plugin's state: the node's resources (their footprints), its GPU devices (their device
    usage: whole GPUs, GPU-milli shares, time-slice replicas, MIG slices), and the
    PodTopologySpread and InterPodAffinity counts (wherever the removed pods run, as
    upstream's RemovePod on the cloned CycleState).

    PreFilter work over the whole cluster (spread and affinity counts) is done once per
    preemptor and reused for every node and every removal set. A removed pod is recognised
    by its key: where it runs and which devices it holds come from this check's own view, so
    the pods may be the caller's own copies of the same pods."""

    __slots__ = (
        "_affinity",
        "_bound",
        "_enabled",
        "_footprints",
        "_nodes",
        "_nominated",
        "_spread",
        "_view",
    )

    def __init__(
        self,
        nodes: Sequence[Node],
        pods: Iterable[Pod],
        *,
        devices: Mapping[str, Sequence[int]] | None = None,
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
        plugins: Collection[str] | None = None,
        nominated: Iterable[Pod] = (),
    ) -> None:
        """`devices`: the devices each GPU pod holds, by pod key (pods not listed are given
        the default choice, in the order listed). `plugins`: the filter plugins registered
        (None: the whole default chain). `nominated`: pending pods with
        status.nominatedNodeName, counted on that node for preemptors of no higher priority
        (RunFilterPluginsWithNominatedPods, which SelectVictimsOnNode runs)."""
        self._init(ClusterView(nodes, list(pods), devices, namespace_labels), nominated)
        self._enabled = None if plugins is None else frozenset(plugins)

    @classmethod
    def from_view(cls, view: ClusterView) -> FilterChainFit:
        check = cls.__new__(cls)
        check._init(view)
        return check

    @classmethod
    def from_state(cls, state: ClusterState) -> FilterChainFit:
        """The check over a ClusterState's active nodes, bound pods, their devices and its
        nominations."""
        check = cls.__new__(cls)
        nominated = [
            replace(pod, nominated_node_name=state.node_names[row])
            for pod, row in state.nominated.values()
        ]
        check._init(ClusterView.from_state(state), nominated)
        return check

    def _init(self, view: ClusterView, nominated: Iterable[Pod] = ()) -> None:
        self._view = view
        self._enabled: frozenset[str] | None = None
        self._nominated: dict[str, list[Pod]] = {}
        for pod in nominated:
            if pod.nominated_node_name and not pod.assigned:
                self._nominated.setdefault(pod.nominated_node_name, []).append(pod)
        self._nodes = {node.name: node for node in view.nodes}
        self._bound = {pod.key: pod for pod in view.bound_pods}
        self._footprints: dict[str, PodFootprint] = {}
        self._spread: tuple[Pod, pts.PreFilterState] | None = None
        self._affinity: tuple[Pod, ipa.FilterState] | None = None

    @property
    def view(self) -> ClusterView:
        return self._view

    def __call__(self, pod: Pod, node: Node, removed: Collection[Pod]) -> Status:
        view = self._view
        # a pod this view does not hold is not running here: removing it changes nothing
        gone = [self._bound[p.key] for p in removed if p.key in self._bound]
        leaving = [p for p in gone if p.node_name == node.name]
        resources = view.node_resources[node.name]
        devices = view.node_devices[node.name]
        gpu = pod_usage(pod).gpu
        if leaving:
            resources = _copy_resources(resources)
            for victim in leaving:
                resources.remove_pod(self._footprint(victim))
            if gpu is not None:
                devices = self._devices_without(devices, leaving)
        spread = None
        if pod.topology_spread_constraints:
            spread = self._spread_state(pod)
            if gone:
                spread = spread.copy()
                for victim in gone:
                    spread.remove_pod(victim, self._nodes[victim.node_name])
        affinity = self._affinity_state(pod)
        if gone and affinity is not None:
            affinity = affinity.copy()
            for victim in gone:
                affinity.update(view.existing_pod(victim), -1)
        ports = view.node_ports.get(node.name)
        freed = [p for p in leaving if p.host_ports]
        if ports is not None and freed:
            ports = ports.copy()
            for victim in freed:
                ports.remove(victim.host_ports)
        volumes = vol.prefilter(pod, view.objects)
        verdict = filter_node(
            pod, node, resources, spread, devices, gpu, affinity, ports, volumes, self._enabled
        )
        nominated = [
            p
            for p in self._nominated.get(node.name, ())
            if p.priority >= pod.priority and p.key != pod.key
        ]
        if not nominated:
            return verdict.status
        # the pass with the nominated pods placed on the node decides when it fails
        resources = _copy_resources(resources)
        devices = NodeDevices(
            devices.spec, list(devices.used_milli), [dict(d) for d in devices.mig_used]
        )
        ports = ports.copy() if ports is not None else hp.UsedPorts()
        spread = spread.copy() if spread is not None else None
        assert self._affinity is not None
        with_them = (affinity or self._affinity[1]).copy()
        for other in nominated:
            resources.add_pod(self._footprint(other))
            other_gpu = pod_usage(other).gpu
            if other_gpu is not None and devices.spec.devices:
                # no devices left for it: counted by its resources only, as in ClusterView
                with contextlib.suppress(ValueError):
                    devices.allocate(other_gpu, devices.choose(other_gpu))
            ports.add(other.host_ports)
            if spread is not None:
                spread.add_pod(other, node)
            with_them.update(ipa.ExistingPod(other, ipa.pod_affinity_info(other), node.labels), 1)
        first = filter_node(
            pod,
            node,
            resources,
            spread,
            devices,
            gpu,
            None if with_them.skip else with_them,
            ports,
            volumes,
            self._enabled,
        )
        return first.status if not first.fits else verdict.status

    def _footprint(self, pod: Pod) -> PodFootprint:
        footprint = self._footprints.get(pod.key)
        if footprint is None:
            footprint = self._footprints[pod.key] = pod.footprint()
        return footprint

    def _devices_without(self, devices: NodeDevices, leaving: Iterable[Pod]) -> NodeDevices:
        held = self._view.pod_devices
        out = NodeDevices(
            devices.spec, list(devices.used_milli), [dict(d) for d in devices.mig_used]
        )
        for victim in leaving:
            chosen = held.get(victim.key)
            gpu = pod_usage(victim).gpu
            if chosen is not None and gpu is not None:
                out.release(gpu, chosen)
        return out

    def _spread_state(self, pod: Pod) -> pts.PreFilterState:
        if self._spread is None or self._spread[0] is not pod:
            state = pts.prefilter(pod, self._view.nodes, list(self._bound.values()))
            self._spread = (pod, state)
        return self._spread[1]

    def _affinity_state(self, pod: Pod) -> ipa.FilterState | None:
        """The preemptor's InterPodAffinity PreFilter counts; None when every node passes
        whatever leaves (no required terms and no existing pod's anti-affinity matches)."""
        if self._affinity is None or self._affinity[0] is not pod:
            self._affinity = (pod, affinity_prefilter(pod, self._view))
        state = self._affinity[1]
        return None if state.skip else state


def _copy_resources(resources: NodeResources) -> NodeResources:
    return NodeResources(
        allocatable=resources.allocatable,  # never mutated by remove_pod
        allowed_pods=resources.allowed_pods,
        requested=dict(resources.requested),
        non_zero_cpu=resources.non_zero_cpu,
        non_zero_memory=resources.non_zero_memory,
        pod_count=resources.pod_count,
    )

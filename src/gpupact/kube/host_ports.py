"""Host ports a pod takes on its node, and the NodePorts filter's conflict rule.

Upstream (pkg/scheduler/util GetHostPorts, framework HostPortInfo, plugins/nodeports):
- A pod uses the ports with hostPort > 0 of its containers and of its restartable init
  containers (restartPolicy Always, sidecars); other init containers finish before it runs.
- hostIP "" means 0.0.0.0 and protocol "" means TCP.
- A wanted (ip, protocol, port) conflicts with a node's used ports when the same protocol and
  port are used on that ip or on 0.0.0.0; a wanted 0.0.0.0 conflicts with that protocol and port
  on any ip.
- Filter failure: Unschedulable, "node(s) didn't have free ports for the requested pod ports".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpupact.errors import PathPart
from gpupact.kube.fields import integer, optional_list, optional_mapping, string
from gpupact.kube.status import SUCCESS, Code, Status

PLUGIN = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"
STATUS = Status(Code.UNSCHEDULABLE, (REASON,), PLUGIN)
BIND_ALL = "0.0.0.0"
DEFAULT_PROTOCOL = "TCP"


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


def _container_ports(container: Any, path: tuple[PathPart, ...]) -> list[HostPort]:
    body = optional_mapping(container, path)
    out = []
    for i, item in enumerate(optional_list(body.get("ports"), (*path, "ports"))):
        where = (*path, "ports", i)
        port = optional_mapping(item, where)
        host_port = integer(port.get("hostPort"), (*where, "hostPort"))
        if host_port <= 0:
            continue
        ip = string(port.get("hostIP"), (*where, "hostIP")) or BIND_ALL
        protocol = string(port.get("protocol"), (*where, "protocol")) or DEFAULT_PROTOCOL
        out.append(HostPort(ip, protocol, host_port))
    return out


def parse_host_ports(
    containers: Any, init_containers: Any, path: Sequence[PathPart] = ("spec",)
) -> tuple[HostPort, ...]:
    """The pod's host ports: restartable init containers first, then containers."""
    path = tuple(path)
    out: list[HostPort] = []
    for i, c in enumerate(optional_list(init_containers, (*path, "initContainers"))):
        where = (*path, "initContainers", i)
        if optional_mapping(c, where).get("restartPolicy") == "Always":
            out.extend(_container_ports(c, where))
    for i, c in enumerate(optional_list(containers, (*path, "containers"))):
        out.extend(_container_ports(c, (*path, "containers", i)))
    return tuple(out)


class UsedPorts:
    """A node's used host ports (upstream HostPortInfo), counted so unbinding one of two pods
    on the same port keeps it used."""

    __slots__ = ("_by_ip",)

    def __init__(self, ports: Iterable[HostPort] = ()) -> None:
        self._by_ip: dict[str, Counter[tuple[str, int]]] = {}
        self.add(ports)

    def add(self, ports: Iterable[HostPort], delta: int = 1) -> None:
        for p in ports:
            used = self._by_ip.setdefault(p.ip, Counter())
            used[(p.protocol, p.port)] += delta
            if used[(p.protocol, p.port)] <= 0:
                del used[(p.protocol, p.port)]
                if not used:
                    del self._by_ip[p.ip]

    def remove(self, ports: Iterable[HostPort]) -> None:
        self.add(ports, -1)

    def conflicts(self, port: HostPort) -> bool:
        pair = (port.protocol, port.port)
        if port.ip == BIND_ALL:
            return any(pair in used for used in self._by_ip.values())
        return any(pair in self._by_ip.get(ip, ()) for ip in (BIND_ALL, port.ip))

    def fits(self, wanted: Iterable[HostPort]) -> bool:
        return not any(self.conflicts(p) for p in wanted)

    def copy(self) -> UsedPorts:
        other = UsedPorts()
        other._by_ip = {ip: Counter(used) for ip, used in self._by_ip.items()}
        return other

    def __bool__(self) -> bool:
        return bool(self._by_ip)


def filter_ports(wanted: Sequence[HostPort], used: UsedPorts | None) -> Status:
    """NodePorts Filter for one node."""
    if wanted and used and not used.fits(wanted):
        return STATUS
    return SUCCESS

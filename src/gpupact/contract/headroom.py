"""The headroom a service keeps: its own when it sets one, else its class's.

One home for the override, so `check` (pool headroom), `compile` (the HPA's utilisation target)
and `plan` (capacity sizing) cannot drift apart on it.
"""

from __future__ import annotations

from gpupact.contract.schema import Service, WorkloadClass


def service_headroom(service: Service, klass: WorkloadClass) -> int:
    """Per cent of capacity kept free for `service` running in `klass`."""
    if service.headroom is not None:
        return service.headroom
    # a resolved class always has one (20% online, else 0%); `or 0` covers an unresolved one
    return klass.headroom or 0

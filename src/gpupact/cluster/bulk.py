"""Building many long-lived objects at once (a snapshot load, a scheduling session's node and
task tables) without the cyclic garbage collector's repeated full passes."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

BULK_OBJECTS = 200_000  # new container objects above which one full collection follows


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic garbage collector while the block builds objects.

    A bulk build allocates many long-lived containers and almost no garbage; with the
    collector running, its repeated full passes over the growing heap can cost more than the
    build itself. Paused, a large build is examined once, by one full collection on the way
    out (a small one is left to the collector's usual young pass). Only a collector that was
    enabled is resumed."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        if gc.get_count()[0] > BULK_OBJECTS:
            gc.collect()

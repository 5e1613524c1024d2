"""An overall deadline for each request of the live client: connect, headers and body together.

urllib3's read timeout bounds each wait for the next bytes, not the exchange: a server that
drips a byte just under it holds one list page (or its headers) open without bound. kubectl's
`--request-timeout` is an overall limit (client-go sets Go's `http.Client.Timeout`, which
covers connecting, any redirects and reading the response body: https://pkg.go.dev/net/http#Client
"Timeout specifies a time limit for requests made by this Client. The timeout includes
connection time, any redirects, and reading the response body."). Here a timer shuts the
request's socket down when the deadline passes: the blocked read ends at once with an error,
and the caller reports the deadline instead.

The client's connections register themselves as they connect (their pool's connection class
is wrapped, whatever the pool: direct, HTTP proxy or SOCKS); one request runs at a time per
client, so the sockets to shut are those of this client.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from gpupact.errors import FieldError, InputError

# The API server ends a request that is not long-running (a list is not; a watch is) after its
# --request-timeout, default 60 s: `RequestTimeout: time.Duration(60) * time.Second` in NewConfig,
# https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apiserver/pkg/server/config.go
# Twice that leaves the transfer of a large page as much time again.
DEFAULT_SECONDS = 120.0
ENV = "GPUPACT_REQUEST_TIMEOUT"


class DeadlineExceeded(Exception):
    """Raised by `RequestDeadline.request` when the deadline ended the request."""


def configured_seconds() -> float:
    """$GPUPACT_REQUEST_TIMEOUT (seconds, or a duration such as 30s, 2m) or the default."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        from gpupact.ops.cold_start import parse_duration

        try:
            seconds = float(parse_duration(text))
        except FieldError:
            seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(
            f"${ENV}: expected seconds > 0 or a duration such as 30s or 2m, got {text!r}"
        )
    return seconds


class RequestDeadline:
    """`install` it on a urllib3 pool manager, then run each request inside `request()`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._expired = False
        self._request = 0  # which request a timer belongs to: a late one ends no other
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()

    def install(self, pool_manager: Any) -> None:
        """Wrap the connection class of every pool the manager will create."""
        deadline = self
        wrapped = {}
        for scheme, pool_cls in pool_manager.pool_classes_by_scheme.items():
            base = pool_cls.ConnectionCls

            def connect(conn: Any, _base: Any = base) -> None:
                _base.connect(conn)
                deadline._register(conn)

            connection_cls = type(base.__name__, (base,), {"connect": connect})
            wrapped[scheme] = type(
                pool_cls.__name__, (pool_cls,), {"ConnectionCls": connection_cls}
            )
        pool_manager.pool_classes_by_scheme = wrapped

    @contextmanager
    def request(self) -> Iterator[None]:
        """Run one request (headers and the body read) under the deadline: DeadlineExceeded
        when it passed, whether the cut-off read raised or only came back short."""
        with self._lock:
            self._expired = False
            self._request += 1
        timer = threading.Timer(self.seconds, self._expire, (self._request,))
        timer.daemon = True
        timer.start()
        try:
            yield
        except Exception as err:
            if self._expired:
                self._close_all()
                raise DeadlineExceeded from err
            raise
        finally:
            timer.cancel()
        if self._expired:
            self._close_all()
            raise DeadlineExceeded

    def _close_all(self) -> None:
        """Close what the deadline shut (in the request's own thread, its read now over): the
        file descriptors go at once, not when the collector finds them."""
        with self._lock:
            for conn in list(self._connections):
                with suppress(Exception):
                    conn.close()

    def _register(self, conn: Any) -> None:
        with self._lock:
            self._connections.add(conn)
            if self._expired:  # connected after the deadline: end it before it sends
                _shut(conn)

    def _expire(self, request: int) -> None:
        with self._lock:
            if request != self._request:
                return
            self._expired = True
            for conn in list(self._connections):
                _shut(conn)


def _shut(conn: Any) -> None:
    sock = getattr(conn, "sock", None)
    if sock is None:
        return
    with suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv; close() alone would not

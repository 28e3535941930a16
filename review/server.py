"""Serving the review app with uvicorn, with logs that never show the access token."""

from __future__ import annotations

import logging
import socket
import sys
from typing import Callable

from review.app import create_app
from review.security import check_binding
from scaffold.secrets import SecretRegistry
from scaffold.store import Store


def serve(
    store: Store,
    host: str,
    port: int,
    token: str | None,
    secrets: SecretRegistry,
    announce: Callable[[int], None] | None = None,
    traces: dict | None = None,
) -> None:
    """Check the binding (raises BindingError), bind, call `announce(port)` (the bound port), then serve until interrupted.

    The banner comes after the bind so that it never advertises a server that could not start.
    """
    import uvicorn

    check_binding(host, token)
    if token:
        secrets.add(token)  # redacted from every log line and terminal write from now on
    handler = logging.StreamHandler(secrets.stream(sys.stderr))
    # The access log prints request lines, and a first visit's carries ?token=...
    handler.addFilter(secrets.log_filter())
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers, logger.propagate = [handler], False
        logger.setLevel(logging.INFO)
    # Bind first: a port in use is an OSError here (one line for the CLI), not uvicorn's
    # startup failure (exit 3 after several log lines); uvicorn then serves on this socket.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    dual = family == socket.AF_INET6 and host in ("::", "") and socket.has_dualstack_ipv6()
    sock = socket.create_server((host, port), family=family, dualstack_ipv6=dual)
    if announce is not None:
        announce(sock.getsockname()[1])
    config = uvicorn.Config(create_app(store, token, traces), host=host, port=port, log_config=None, server_header=False)
    uvicorn.Server(config).run(sockets=[sock])

"""The Ray cluster a distributed learn or rebuild runs on: importing Ray (only here, and
only when ``--ray`` is given), checking an address before Ray is asked to join it, and
starting a local cluster or attaching to one.

Addresses (``kbdb learn PATH --ray [ADDRESS]``):

- ``local`` (``--ray`` without a value): start a Ray instance on this machine with its
  cores, or join the one ``ray start`` left running here (Ray's own rule for
  ``ray.init()``: ``RAY_ADDRESS``, then the cluster recorded under ``/tmp/ray``);
- ``auto``: the cluster ``ray start`` made on this machine, or ``RAY_ADDRESS``; never a new
  one;
- ``HOST:PORT``: a cluster's head node (the GCS port, 6379 by default);
- ``ray://HOST:PORT``: the Ray Client server of a head node (port 10001 by default).

A process that already called ``ray.init`` (a notebook, the tests) keeps its cluster: the
address is not consulted and the cluster is not shut down afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any

from kbdb.errors import InvalidArgumentError

LOCAL = "local"
AUTO = "auto"
MIN_RAY = (2, 9)
INSTALL_HINT = "pip install 'kbdb[ray]'"
CONNECT_TIMEOUT_S = 5.0
"""How long the address check waits for a TCP connection. Ray itself retries an address
that does not answer for minutes (30 s per attempt, measured with Ray 2.60) before it
gives up, so a closed port or a dead host is found here first."""

_DEFAULT_PORTS = {"ray": 10001, "": 6379}


def import_ray() -> Any:
    """The ``ray`` module with Ray Data, or an error that names the fix."""
    try:
        import ray
        import ray.data  # noqa: F401  (the pipelines need Ray Data, in the [data] extra)
    except ImportError as exc:
        raise InvalidArgumentError(
            f"--ray needs Ray with Ray Data, which is not installed ({exc.msg})",
            hint=f"{INSTALL_HINT}, or learn without --ray",
        ) from None
    version = tuple(int(p) for p in ray.__version__.split(".")[:2] if p.isdigit())
    if version < MIN_RAY:
        need = ".".join(map(str, MIN_RAY))
        raise InvalidArgumentError(
            f"--ray needs Ray {need} or later (installed: {ray.__version__})",
            hint=INSTALL_HINT.replace("pip install", "pip install --upgrade"),
        )
    return ray


def host_port(address: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``ray://HOST[:PORT]`` split into a host and a port."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "", address
    if scheme not in _DEFAULT_PORTS:
        raise InvalidArgumentError(
            f"unknown Ray address scheme in {address!r}",
            hint="give HOST:PORT, ray://HOST:PORT, auto, or --ray alone for a local cluster",
        )
    rest = rest.rstrip("/")
    host, colon, port = rest.rpartition(":")
    if not colon:
        if not scheme:
            raise InvalidArgumentError(
                f"the Ray address {address!r} has no port",
                hint="give HOST:PORT (the head node's GCS port, 6379 by default)",
            )
        host, port = rest, str(_DEFAULT_PORTS[scheme])
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidArgumentError(
            f"the Ray address {address!r} is not HOST:PORT",
            hint="give HOST:PORT, ray://HOST:PORT, auto, or --ray alone for a local cluster",
        )
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast, naming ``address``, when nothing accepts a connection there."""
    host, port = host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise InvalidArgumentError(
            f"no Ray cluster answers at {address} ({reason.lower()})",
            hint="start one with 'ray start --head' on that machine, or check the address",
        ) from None


def join(address: str | None, *, namespace: str | None = None) -> tuple[Any, bool]:
    """Ray, joined to the cluster at ``address`` (see the module docstring; None is
    ``local``), and whether this call joined it (False: the process already had a
    cluster, which it keeps)."""
    ray = import_ray()
    quiet_ray_data(ray)
    if ray.is_initialized():
        return ray, False
    address = address or LOCAL
    options: dict[str, Any] = {"logging_level": logging.ERROR, "include_dashboard": False}
    if namespace is not None:
        options["namespace"] = namespace
    if address == AUTO:
        options["address"] = AUTO
    elif address != LOCAL:
        check_reachable(address)
        options["address"] = address
    if "address" in options:
        options.pop("include_dashboard")  # only for a cluster started here
    try:
        ray.init(**options)
    except ConnectionError as exc:
        where = "on this machine" if address == AUTO else f"at {address}"
        raise InvalidArgumentError(
            f"no Ray cluster {where} ({str(exc).splitlines()[0]})",
            hint="start one with 'ray start --head', or give --ray HOST:PORT",
        ) from None
    return ray, True


@contextlib.contextmanager
def connect(address: str) -> Iterator[Any]:
    """Ray, joined to the cluster at ``address`` (see the module docstring) for the life
    of the context; a cluster started or joined here is left at the end."""
    ray, joined = join(address)
    try:
        yield ray
    finally:
        if joined:
            ray.shutdown()


def quiet_ray_data(ray: Any) -> None:
    """Keep Ray Data's console progress and per-run log lines off the terminal: kbdb draws
    its own progress bar, and ``--quiet`` and ``--json`` must stay quiet."""
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)

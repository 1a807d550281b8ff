"""The one clock: every time kbdb stores (learned, retired) and every relative time a
search takes (``since 7d``) is read from ``CLOCK``. Tests replace it (``set_clock``) to
write histories at chosen moments."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

STORE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
"""How times are stored: UTC, to the second; orders as it reads."""


def _system() -> datetime:
    return datetime.now(timezone.utc)


CLOCK: Callable[[], datetime] = _system


def now() -> datetime:
    """The current time, aware, in UTC."""
    return CLOCK().astimezone(timezone.utc)


def utc_now() -> str:
    """The current time as stored."""
    return now().strftime(STORE_FORMAT)


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Read the time from ``clock`` (an aware ``datetime`` each call) from now on; None
    goes back to the system clock."""
    global CLOCK
    CLOCK = clock or _system

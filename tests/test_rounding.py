"""``kbdb.search.rounding.round_to`` against ``round``, bit for bit."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kbdb.search.rounding import round_to


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def check(x: float, digits: int) -> None:
    assert bits(round_to(x, digits)) == bits(round(x, digits)), (x, digits)


@settings(max_examples=3000, deadline=None)
@given(
    x=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
    digits=st.sampled_from([4, 6, 0, 1, 9]),
)
def test_any_float(x: float, digits: int) -> None:
    check(x, digits)


@settings(max_examples=3000, deadline=None)
@given(k=st.integers(0, 10**9), digits=st.sampled_from([4, 6]), steps=st.integers(-3, 3))
def test_near_ties(k: int, digits: int, steps: int) -> None:
    # The doubles next to k.5 / 10**digits: where rounding the product could go wrong.
    x = (k + 0.5) / 10**digits
    for _ in range(abs(steps)):
        x = math.nextafter(x, math.inf if steps > 0 else -math.inf)
    check(x, digits)


def test_edges() -> None:
    for x in [
        0.0,
        -0.0,
        5e-324,
        1e-7,
        0.5e-6,
        1.5e-6,
        2.5e-6,
        0.1234565,
        2.0**49 / 1e6,
        2.0**52,
        1e300,
        math.inf,
        -math.inf,
        0.99995,
        0.00005,
        1.0,
    ]:
        for digits in (4, 6):
            check(x, digits)
    assert math.isnan(round_to(math.nan, 6))


class _Float(float):
    pass


def test_anything_else_is_rounds_own() -> None:
    # Not a float, or digits outside 0..15: ``round`` itself, same value and type.
    for x, digits in [
        (1, 4),
        (True, 6),
        (7, -1),
        (0.123, -1),
        (1234.5678, -2),
        (0.5, 16),
        (0.25, 40),
        (_Float(0.12345675), 6),
        (10**30, 4),
    ]:
        got, want = round_to(x, digits), round(x, digits)
        assert type(got) is type(want), (x, digits)
        assert got == want, (x, digits)

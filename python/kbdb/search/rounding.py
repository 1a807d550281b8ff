"""``round(x, digits)`` for the scores and confidences of search results, faster.

CPython's ``round(x, n)`` writes ``x`` out to ``n`` decimals (correctly rounded: ties to
even, on the exact binary value) and reads the text back: about 2,000 instructions, and a
page of results rounds twenty numbers. ``round_to`` returns the same double in a few
dozen whenever it can show that it is the same:

- ``s = 10**n`` is exact, and ``y = x * s`` is within half an ulp of the exact product.
- When ``y`` is more than an ulp from every tie (``k + 0.5``), the exact product lies on
  the same side of every tie as ``y``, so ``N = round(y)`` is the integer nearest the
  exact ``x * 10**n``, and ``N / 10**n`` is the ``n``-decimal number ``round`` writes out.
- ``N / s``, with both exact, is the double nearest the rational ``N / 10**n``, which is
  what reading that decimal back gives.

Otherwise (near a tie, zero, negative, huge, not finite) it calls ``round`` itself.
``tests/test_rounding.py`` holds it to ``round`` bit for bit.
"""

from __future__ import annotations

import math

_SCALES = tuple(10.0**n for n in range(16))
# Below this, ulp(y) <= 1/8, so the tie test is decided right: ``y - n`` is exact (Sterbenz,
# or n == 0), and its distance to 0.5 errs by far less than the ulp it is compared with.
_MAX_FAST = 2.0**49


def round_to(x: float, digits: int) -> float:
    """``round(x, digits)``, bit for bit and type for type: the fast way for a ``float``
    and ``0 <= digits < 16``, ``round`` itself for anything else."""
    if type(x) is float and 0 <= digits < 16:
        scale = _SCALES[digits]
        y = x * scale
        if 0.0 < y < _MAX_FAST:
            n = round(y)
            if abs(abs(y - n) - 0.5) > math.ulp(y):
                return n / scale
    return round(x, digits)

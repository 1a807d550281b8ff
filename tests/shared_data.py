"""Where the workplace's shared data is (datasets, corpora, models): ``KBDB_SHARED``, else
``../shared`` beside the checkout, else ``/work/shared`` (this machine's copy, for a
checkout elsewhere, as ``.ci/run`` does for the model)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _find() -> Path:
    if os.environ.get("KBDB_SHARED"):
        return Path(os.environ["KBDB_SHARED"])
    for candidate in (REPO.parent / "shared", Path("/work/shared")):
        if (candidate / "datasets").is_dir():
            return candidate
    return REPO.parent / "shared"


SHARED = _find()
CORPORA = SHARED / "corpora"
DATASETS = SHARED / "datasets"

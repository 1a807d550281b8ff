"""Results of contradictions and skills (SPEC §8.5, §9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbdb.types.base import Record


@dataclass(frozen=True)
class ContradictionMember(Record):
    """One section of a ``contradictions`` group."""

    kbid: str
    heading: str
    docids: tuple[str, ...]
    snippet: str


@dataclass(frozen=True)
class ContradictionGroup(Record):
    """Sections from different documents that cover the same ground. ``similarity`` is
    the highest pairwise similarity inside the group."""

    similarity: float
    sections: tuple[ContradictionMember, ...]


@dataclass(frozen=True)
class ContradictionsResult(Record):
    """SPEC §8.5. ``method``: ``vector`` (embedding cosine) or ``lexical`` (shingle
    Jaccard); ``threshold``: the lowest similarity a pair needed."""

    method: Literal["vector", "lexical"]
    threshold: float
    groups: tuple[ContradictionGroup, ...]


@dataclass(frozen=True)
class SkillLearnResult(Record):
    """``previous``: the kbid of the version this one replaced, or None."""

    name: str
    kbid: str
    previous: str | None = None


@dataclass(frozen=True)
class SkillInfo(Record):
    name: str
    description: str
    tags: tuple[str, ...]
    kbid: str
    updated_at: str


@dataclass(frozen=True)
class SkillList(Record):
    skills: tuple[SkillInfo, ...]


@dataclass(frozen=True)
class Skill(Record):
    """A skill in full (SPEC §9): its Markdown instructions in ``content``."""

    name: str
    description: str
    content: str
    tags: tuple[str, ...]
    kbid: str
    created_at: str

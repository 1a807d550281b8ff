"""``KnowledgeBase.contradictions`` and the skills: ``skill_learn``, ``skill_list`` and
``skill_get`` (SPEC §8.5, §9)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from kbdb import contradictions as contra
from kbdb import neardup, skills
from kbdb.errors import InvalidArgumentError, NotFoundError
from kbdb.kb import _tags
from kbdb.store import queries as q
from kbdb.store import skills as skill_store
from kbdb.types import Skill, SkillInfo, SkillLearnResult, SkillList

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase
    from kbdb.types import ContradictionsResult


def contradictions(
    kb: KnowledgeBase, threshold: float | None, limit: int, tags: Sequence[str] | None
) -> ContradictionsResult:
    """Pairs by cosine when the vector index is current, else by Jaccard over the
    near-duplicate bands, grouped; ``threshold`` must stay below the near-duplicate one."""
    vector = kb._vectors.enabled and not kb._vectors.stale()
    method: Literal["vector", "lexical"] = "vector" if vector else "lexical"
    learn = kb.config.learn
    high = learn.near_duplicate_cosine if vector else learn.near_duplicate_jaccard
    low = contra.default_threshold(method) if threshold is None else threshold
    if not isinstance(low, (int, float)) or isinstance(low, bool) or not 0 < low < high:
        raise InvalidArgumentError(
            f"threshold must be a number above 0 and below the near-duplicate threshold"
            f" {high} ({method} similarity; got {threshold!r})",
            hint="near-duplicates are reported by learn; lower the threshold",
        )
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidArgumentError(f"limit must be an integer in 1..1000 (got {limit!r})")
    wanted = _tags(tags) if tags else None
    if vector:
        kb._refresh_vectors()
        pairs = contra.vector_pairs(kb._db, kb._vectors, float(low), high)
    else:
        catch_up_signatures(kb)
        with kb._db.read() as conn:
            pairs = contra.lexical_pairs(conn, float(low), high)
    with kb._db.read() as conn:
        return contra.group(
            conn, pairs, method=method, threshold=float(low), tags=wanted, limit=limit
        )


def catch_up_signatures(kb: KnowledgeBase) -> None:
    """Bring the near-duplicate band table up to the change log (forget, revise and
    import write only the log); readers never wait for it."""
    with kb._db.read() as conn:
        behind = neardup.is_behind(conn)
    if behind:
        with kb._lock.hold(), kb._db.write() as conn:
            neardup.catch_up(conn)


def skill_learn(
    kb: KnowledgeBase, name: str, description: str, content: str, tags: tuple[str, ...]
) -> SkillLearnResult:
    """A ``document``-mode re-learn of ``skill:NAME``, and its skill metadata, under one
    hold of the writer lock."""
    item = skills.pending(name, description, content, tags)
    kbid = item.doc.sections[0].kbid
    with kb._lock.hold():
        reports, _ = kb._learner.learn_pending([item])
        with kb._db.write() as conn:
            changed = skill_store.set_metadata(
                conn, item.doc.docid, kbid, item.doc.description or "", item.doc.tags
            )
        if changed:
            kb._index.catch_up()
            kb._vectors.catch_up()
    return SkillLearnResult(name=name, kbid=kbid, previous=reports[0].superseded)


def skill_list(kb: KnowledgeBase) -> SkillList:
    """Every live skill, by name, with its tags."""
    with kb._db.read() as conn:
        rows = skill_store.live_skills(conn)
        tags = q.tags_of(conn, [r[1] for r in rows])
    return SkillList(
        skills=tuple(
            SkillInfo(
                name=skills.name_of(doc),
                description=desc,
                tags=tuple(tags.get(kbid, ())),
                kbid=kbid,
                updated_at=updated,
            )
            for doc, kbid, desc, _, _, updated in rows
        )
    )


def skill_get(kb: KnowledgeBase, name: str) -> Skill:
    """The live version of the skill ``name``; NOT_FOUND when there is none."""
    skills.check_name(name)
    with kb._db.read() as conn:
        row = skill_store.skill(conn, skills.docid(name))
        if row is None:
            raise NotFoundError(f"no skill {name!r}", hint="list them with 'kbdb skill list'")
        tags = q.tags_of(conn, [row[1]])
    _, kbid, desc, content, created, _ = row
    return Skill(
        name=name,
        description=desc,
        content=content,
        tags=tuple(tags.get(kbid, ())),
        kbid=kbid,
        created_at=created,
    )

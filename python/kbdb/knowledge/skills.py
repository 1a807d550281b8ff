"""Skills (SPEC §9): named, reusable procedures that an agent fetches by name.

A skill ``NAME`` is stored as the document ``skill:NAME`` holding one section: heading and
title ``NAME``, the skill's description, its Markdown instructions as the content (kept
whole, headings included, so that ``skill_get`` returns them as written), section type
``skill``, and the skill's tags. Learning it again is a re-learn of that document, so a
changed skill supersedes the old version (``superseded_by``, ``history``) and an unchanged
one is left alone. Names are kebab-case: lower-case letters and digits in words joined by
single hyphens, at most ``MAX_NAME`` characters.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdb.errors import InvalidArgumentError, NotFoundError
from kbdb.ingest import compute_kbid
from kbdb.learn.items import Pending
from kbdb.store import NewDocument, NewSection
from kbdb.store import queries as q
from kbdb.store import skills as skill_store
from kbdb.store.skills import DOCID_PREFIX
from kbdb.types import Skill, SkillInfo, SkillLearnResult, SkillList

if TYPE_CHECKING:
    from kbdb.context import Context
    from kbdb.learn import Learner

SKILL_FILE = "SKILL.md"
SECTION_TYPE = "skill"
TYPE = "text/markdown"
MAX_NAME = 64
_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")


def check_name(name: object) -> str:
    """``name`` if it is kebab-case, else INVALID_ARGUMENT saying how to fix it."""
    if not isinstance(name, str) or not _KEBAB.match(name) or len(name) > MAX_NAME:
        suggestion = re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")[:MAX_NAME]
        hint = f"for example {suggestion!r}" if suggestion else "for example 'deploy-app'"
        raise InvalidArgumentError(
            f"skill name {name!r} is not kebab-case (lower-case letters and digits, words "
            f"joined by single hyphens, at most {MAX_NAME} characters)",
            hint=hint,
        )
    return name


def docid(name: str) -> str:
    return DOCID_PREFIX + name


def name_of(doc: str) -> str:
    return doc[len(DOCID_PREFIX) :]


def pending(name: str, description: str, content: str, tags: Sequence[str]) -> Pending:
    """The learn of one skill: a ``document``-mode re-learn of ``skill:NAME``."""
    check_name(name)
    if not isinstance(description, str) or not description.strip():
        raise InvalidArgumentError(
            f"skill {name!r} needs a description", hint="say in one line when to use it"
        )
    if not isinstance(content, str) or not content.strip():
        raise InvalidArgumentError(
            f"skill {name!r} has no content", hint="give its Markdown instructions"
        )
    description = description.strip()
    doc = docid(name)
    section = NewSection(
        kbid=compute_kbid(TYPE, name, content),
        heading=name,
        level=1,
        parent=None,
        content=content,
        type=TYPE,
        section_type=SECTION_TYPE,
        title=name,
        description=description,
        source_key=f"{doc}#{name}",
        tags=tuple(tags),
    )
    checksum = hashlib.sha256(
        "\x00".join((TYPE, name, description, "\x1f".join(tags), content)).encode(
            "utf-8", "surrogatepass"
        )
    ).hexdigest()
    new = NewDocument(
        docid=doc,
        title=name,
        description=description,
        source_path=None,
        type=TYPE,
        checksum=checksum,
        tags=tuple(tags),
        sections=(section,),
    )
    return Pending(new, "document", {})


def read_skill_file(path: Path) -> tuple[str, str, str, list[str]]:
    """(name, description, content, tags) from a ``SKILL.md`` (or a folder holding one).
    The name falls back to the folder's name when the front matter has none."""
    file = path / SKILL_FILE if path.is_dir() else path
    if not file.is_file():
        raise InvalidArgumentError(
            f"no {SKILL_FILE} in {path}", hint=f"give a folder with a {SKILL_FILE}, or the file"
        )
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"{file} is not UTF-8 text") from None
    meta, body = _front_matter(text, file)
    name = meta.get("name", file.parent.name)
    description = meta.get("description")
    if description is None:
        raise InvalidArgumentError(
            f"{file} has no description in its front matter",
            hint="add 'description: …' between the --- lines",
        )
    tags = meta.get("tags", [])
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidArgumentError(f"{file}: tags must be a list of strings")
    if not isinstance(name, str) or not isinstance(description, str):
        raise InvalidArgumentError(f"{file}: name and description must be strings")
    return name, description, body, tags


def _front_matter(text: str, file: Path) -> tuple[dict[str, Any], str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise InvalidArgumentError(
            f"{file} has no front matter",
            hint="start it with '---', then name, description and tags, then '---'",
        )
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            import yaml  # lazy, as for Markdown front matter

            try:
                meta = yaml.safe_load("".join(lines[1:i])) or {}
            except (yaml.YAMLError, ValueError) as e:
                raise InvalidArgumentError(f"{file}: front matter does not parse: {e}") from None
            if not isinstance(meta, dict):
                raise InvalidArgumentError(f"{file}: front matter must be a mapping")
            return meta, "".join(lines[i + 1 :]).lstrip("\n")
    raise InvalidArgumentError(f"{file}: front matter is not closed with '---'")


class Skills:
    """``skill_learn``, ``skill_list`` and ``skill_get`` over one knowledge base; a skill is
    learned through its ``learner``."""

    def __init__(self, ctx: Context, learner: Learner) -> None:
        self._ctx = ctx
        self._learner = learner

    def learn(
        self, name: str, description: str, content: str, tags: tuple[str, ...]
    ) -> SkillLearnResult:
        """A ``document``-mode re-learn of ``skill:NAME``, and its skill metadata, under one
        hold of the writer lock."""
        ctx = self._ctx
        item = pending(name, description, content, tags)
        kbid = item.doc.sections[0].kbid
        with ctx.lock.hold():
            reports, _ = self._learner.learn_pending([item])
            with ctx.db.write() as conn:
                changed = skill_store.set_metadata(
                    conn, item.doc.docid, kbid, item.doc.description or "", item.doc.tags
                )
            if changed:
                ctx.index.catch_up()
                ctx.vectors.catch_up()
        return SkillLearnResult(name=name, kbid=kbid, previous=reports[0].superseded)

    def list(self) -> SkillList:
        """Every live skill, by name, with its tags."""
        with self._ctx.db.read() as conn:
            rows = skill_store.live_skills(conn)
            tags = q.tags_of(conn, [r[1] for r in rows])
        return SkillList(
            skills=tuple(
                SkillInfo(
                    name=name_of(doc),
                    description=desc,
                    tags=tuple(tags.get(kbid, ())),
                    kbid=kbid,
                    updated_at=updated,
                )
                for doc, kbid, desc, _, _, updated in rows
            )
        )

    def get(self, name: str) -> Skill:
        """The live version of the skill ``name``; NOT_FOUND when there is none."""
        check_name(name)
        with self._ctx.db.read() as conn:
            row = skill_store.skill(conn, docid(name))
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

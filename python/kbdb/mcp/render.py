"""Compact text for tool results: what a model reads when its client shows only ``content``.

The structured result (``structuredContent``) is always the full ``to_dict()``. The text is a
short rendering of the same data for the tools an agent calls most (search, recall, learn)
and for the link tools (links, context), and compact JSON for the rest, so no client loses
information.
"""

from __future__ import annotations

import json
from typing import Any


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render(tool: str, d: dict[str, Any]) -> str:
    fn = _RENDERERS.get(tool)
    return fn(d) if fn is not None else compact_json(d)


def _cite(source: dict[str, Any] | None) -> str | None:
    """``path:12-40`` (or ``path p.3``) of a result's ``source``; None when unknown."""
    if not source or source.get("path") is None:
        return None
    start, end, page = source.get("start_line"), source.get("end_line"), source.get("page")
    if start is not None:
        end = start if end is None else end
        return f"{source['path']}:{start}" + ("" if end == start else f"-{end}")
    return f"{source['path']} p.{page}" if page is not None else str(source["path"])


def _search(d: dict[str, Any]) -> str:
    items = d["items"]
    head = [
        f"verdict: {d['retrieval_verdict']}",
        f"{len(items)} of {d['total']} (offset {d['offset']})",
        f"method: {d['retrieval_method']}",
    ]
    if d["relaxed"]:
        head.append("relaxed: not every term matched")
    if d["vector_index_stale"]:
        head.append("vector index stale: lexical only (run rebuild)")
    lines = [" · ".join(head)]
    for i, it in enumerate(items, start=d["offset"] + 1):
        meta = [f"kbid {it['kbid']}", f"doc {','.join(it['docids'])}"]
        cite = _cite(it.get("source"))
        if cite:
            meta.append(f"source {cite}")
        if it["tags"]:
            meta.append(f"tags {','.join(it['tags'])}")
        meta.append(f"confidence {it['confidence']:.2f}")
        if it.get("relaxed"):
            meta.append("relaxed")
        lines.append(f"{i}. {it['heading'] or '(no heading)'} [{'; '.join(meta)}]")
        text = it.get("content") if it.get("content") is not None else it["snippet"]
        if text:
            lines.append("   " + " ".join(text.split()))
    if d["has_more"]:
        lines.append(f"more results: offset={d['offset'] + d['limit']}")
    if d["retrieval_verdict"] == "unanswered":
        lines.append("nothing relevant is stored: investigate, do not guess.")
    return "\n".join(lines)


def _recall(d: dict[str, Any]) -> str:
    parts = []
    for s in d["sections"]:
        meta = [f"kbid {s['kbid']}", f"doc {','.join(s['docids'])}"]
        cite = _cite(s.get("source"))
        if cite:
            meta.append(f"source {cite}")
        if s["tags"]:
            meta.append(f"tags {','.join(s['tags'])}")
        if s["retired"]:
            meta.append(
                "RETIRED" + (f", superseded by {s['superseded_by']}" if s["superseded_by"] else "")
            )
        level = max(1, min(int(s["level"] or 1), 6))
        heading = s["heading"] or s["title"] or "(no heading)"
        parts.append(f"{'#' * level} {heading}\n[{'; '.join(meta)}]\n{s['content'].strip()}")
    return "\n\n---\n\n".join(parts)


def _learn(d: dict[str, Any]) -> str:
    """The totals, the count of each notice kind (a warning code, near duplicates, failed
    embeddings) when there are any, then a line per section: every kbid stays in the text,
    the counts say at once what to look at."""
    lines = [
        f"learned: {d['sections_added']} sections added, {d['sections_unchanged']} unchanged, "
        f"{d['sections_retired']} retired"
    ]
    counts: dict[str, int] = {}
    for s in d["sections"]:
        for code in s["warnings"]:
            counts[f"warning {code}"] = counts.get(f"warning {code}", 0) + 1
        if s["near_duplicates"]:
            counts["near duplicates"] = counts.get("near duplicates", 0) + 1
        if s["vector_embedding_failed"]:
            counts["embedding failed"] = counts.get("embedding failed", 0) + 1
    if counts:
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        lines.append("sections with " + ", ".join(f"{k}: {n}" for k, n in ordered))
    for s in d["sections"]:
        extra = []
        if s.get("superseded"):
            extra.append(f"supersedes {s['superseded']}")
        if s["near_duplicates"]:
            near = ", ".join(f"{n['kbid']} ({n['similarity']:.2f})" for n in s["near_duplicates"])
            extra.append(f"near duplicates: {near}")
        if s["warnings"]:
            extra.append(f"warnings: {', '.join(s['warnings'])}")
        if s["vector_embedding_failed"]:
            extra.append("embedding failed (lexical only until rebuild)")
        doc = f" doc {s['docid']}" if s.get("docid") else ""
        tail = f" ({'; '.join(extra)})" if extra else ""
        lines.append(f"- {s['kbid']} {s['heading'] or '(no heading)'} [{s['status']}{doc}]{tail}")
    return "\n".join(lines)


def _place(docid: str | None, heading: str | None) -> str:
    """``docid › heading`` (the heading left out when the section has none)."""
    return f"{docid} › {heading}" if heading else str(docid)


def _written(link: dict[str, Any]) -> str:
    """``kind target#fragment|label``: the link as written, and what kind it is."""
    text = link["target"] + (f"#{link['fragment']}" if link["fragment"] else "")
    return f"{link['kind']} {text}" + (f"|{link['label']}" if link["label"] else "")


def _links(d: dict[str, Any]) -> str:
    """A line per link: where it is (document, line, section), the link as written, and
    where it goes (out: its status and target; in: the heading it names)."""
    named = d["docid"] if d["kbid"] is None else d["kbid"]
    what = "links of" if d["direction"] == "out" else "backlinks of"
    lines = [f"{len(d['items'])} {what} {named}"]
    for it in d["items"]:
        at = it["from_docid"] + (f":{it['line']}" if it["line"] is not None else "")
        where = f"{at} ({it['from_heading']}; kbid {it['from_kbid']})"
        if it["from_heading"] == "":
            where = f"{at} (kbid {it['from_kbid']})"
        if d["direction"] == "out":
            goes = it["status"]
            if it["to_docid"] is not None:
                goes += f" -> {_place(it['to_docid'], it['to_heading'])} [kbid {it['to_kbid']}]"
            lines.append(f"- {where} {_written(it)}: {goes}")
        else:
            lines.append(f"- {where} {_written(it)} -> {_place(it['to_docid'], it['to_heading'])}")
    return "\n".join(lines)


def _context(d: dict[str, Any]) -> str:
    """Each hit as ``search`` shows it, then its neighbours, a line each: ``->`` a note
    it links to, ``<-`` one that links to it."""
    lines = [f"verdict: {d['retrieval_verdict']} · method: {d['retrieval_method']}"]
    for i, it in enumerate(d["items"], start=1):
        meta = f"kbid {it['kbid']}; doc {','.join(it['docids'])}; confidence {it['confidence']:.2f}"
        lines.append(f"{i}. {it['heading'] or '(no heading)'} [{meta}]")
        if it["snippet"]:
            lines.append("   " + " ".join(it["snippet"].split()))
        for n in it["neighbours"]:
            arrow = "->" if n["relation"] == "out" else "<-"
            label = f' "{n["label"]}"' if n["label"] else ""
            lines.append(f"   {arrow} {_place(n['docid'], n['heading'])}{label} [kbid {n['kbid']}]")
            if n["snippet"]:
                lines.append(f"      {n['snippet']}")
    if d["retrieval_verdict"] == "unanswered":
        lines.append("nothing relevant is stored: investigate, do not guess.")
    return "\n".join(lines)


_RENDERERS = {
    "search": _search,
    "recall": _recall,
    "learn": _learn,
    "links": _links,
    "context": _context,
}

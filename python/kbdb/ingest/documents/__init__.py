"""Splitters of the ``documents`` extra: PDF, Word, PowerPoint, Excel and EPUB files
(docs/formats.md).

Each module has ``split(data, *, name) -> ParsedDocument`` and is reached through the
registry in ``kbdb.ingest.formats``. The text they take out is stored as Markdown
(tables as Markdown tables). ``common`` holds what they share: the limits that keep a
hostile file's memory bounded, the ZIP checks every Office and EPUB file passes first,
and the Markdown table writer.
"""

"""Search: query parsing, the lexical path, fusion, snippets, confidence.

This is the only code that fuses ranked lists."""

"""Search: query parsing, the lexical path, fusion, snippets, confidence. The only code that fuses."""

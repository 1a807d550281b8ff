"""The index room: the lexical index (the Rust engine's segments) and the vector index,
each kept in step with the database's change log."""

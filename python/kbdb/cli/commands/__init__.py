"""One module per command (or small family of commands). Each parses, calls
``KnowledgeBase`` and hands the result to ``kbdb.cli.render``."""

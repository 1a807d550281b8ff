"""Source code split by definition (``kbdb.ingest.code``, docs/code.md): each language's
definitions, lines and headings; identifier search end to end; hostile input; the
``code`` extra missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.test_watch import Running, hits, wait_for

import kbdb
import kbdb.ingest.formats as formats
from kbdb.cli.render import numbered_lines
from kbdb.ingest.code import CODE_INVALID, MAX_DEPTH, MAX_SECTION_LINES, split
from kbdb.ingest.codelang import grammar_for
from kbdb.ingest.section import ParsedDocument, ParsedSection
from kbdb.search.codefields import CODE_TYPES, code_fields

DATA = Path(__file__).parent / "data" / "code"


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def outline(doc: ParsedDocument) -> list[tuple[str, int, int]]:
    """(heading, first line, last line) of every section."""
    return [(s.heading, s.start_line or 0, s.end_line or 0) for s in doc.sections]


def named(doc: ParsedDocument, heading: str) -> ParsedSection:
    (found,) = [s for s in doc.sections if s.heading == heading]
    return found


def assert_no_line_lost(text: str, doc: ParsedDocument) -> None:
    """Every non-blank line of the file is in exactly one section's content."""
    want = Counter(line for line in text.replace("\r\n", "\n").split("\n") if line.strip())
    got = Counter(line for s in doc.sections for line in s.content.split("\n") if line.strip())
    assert got == want
    for s in doc.sections:
        assert s.start_line is not None and s.end_line is not None
        assert 1 <= s.start_line <= s.end_line


# -- each language ----------------------------------------------------------------------

PYTHON = dedent('''
    """Configuration files."""
    import os

    # Read one file.
    def parse_config(path: str) -> dict:
        """Parse the file at ``path``."""
        return {}

    @dataclass
    class Config(Base):
        """A configuration."""
        name: str = "x"

        def parse(self, path: str) -> "Config":
            return self

        class Inner:
            def deep(self):
                pass

    if __name__ == "__main__":
        parse_config(os.sys.argv[1])
''')


def test_python_definitions_headings_paths_lines() -> None:
    doc = split(PYTHON, name="config.py")
    assert outline(doc) == [
        ("config.py", 1, 2),
        ("parse_config(path: str) -> dict", 4, 7),
        ("class Config(Base)", 9, 19),
        ('Config.parse(self, path: str) -> "Config"', 14, 15),
        ("class Config.Inner", 17, 19),
        ("Config.Inner.deep(self)", 18, 19),
        ("config.py", 21, 22),
    ]
    config = named(doc, "class Config(Base)")
    # the class holds its decorator, docstring and fields, not its methods
    assert config.content.startswith("@dataclass\nclass Config(Base):\n")
    assert "def parse" not in config.content and '"""A configuration."""' in config.content
    deep = named(doc, "Config.Inner.deep(self)")
    assert deep.heading_path == ("Config", "Inner", "deep") and deep.level == 3
    assert doc.sections[deep.parent or 0].heading == "class Config.Inner"
    assert named(doc, "parse_config(path: str) -> dict").content.startswith("# Read one file.")
    assert_no_line_lost(PYTHON, doc)


RUST = dedent("""
    use std::path::Path;

    /// A configuration.
    #[derive(Debug)]
    pub struct Config {
        name: String,
    }

    impl Config {
        /// Parse it.
        pub fn parse(path: &Path) -> Result<Config> {
            todo!()
        }
    }

    impl<T> Display for Wrapper<T> {
        fn fmt(&self, f: &mut Formatter) -> fmt::Result {
            Ok(())
        }
    }

    pub trait Reader {
        fn read(&mut self) -> usize;
    }

    pub enum Kind { A, B }

    /// The crate's result.
    pub type Result<T> = std::result::Result<T, Error>;

    macro_rules! noop {
        () => {};
    }
""")


def test_rust_struct_impl_trait_enum_type_macro() -> None:
    doc = split(RUST, name="config.rs")
    assert outline(doc) == [
        ("config.rs", 1, 1),
        ("pub struct Config", 3, 7),
        ("impl Config", 9, 14),
        ("Config::parse(path: &Path) -> Result<Config>", 10, 13),
        ("impl<T> Display for Wrapper<T>", 16, 20),
        ("Wrapper::fmt(&self, f: &mut Formatter) -> fmt::Result", 17, 19),
        ("pub trait Reader", 22, 24),
        ("Reader::read(&mut self) -> usize", 23, 23),  # a required method
        ("pub enum Kind", 26, 26),
        ("pub type Result<T> = std::result::Result<T, Error>", 28, 29),
        ("macro_rules! noop", 31, 33),
    ]
    parse = named(doc, "Config::parse(path: &Path) -> Result<Config>")
    assert parse.heading_path == ("impl Config", "parse")
    assert parse.content.lstrip().startswith("/// Parse it.")
    assert named(doc, "Wrapper::fmt(&self, f: &mut Formatter) -> fmt::Result").heading_path == (
        "impl Display for Wrapper",
        "fmt",
    )
    assert named(doc, "pub struct Config").content.startswith("/// A configuration.\n#[derive")
    assert_no_line_lost(RUST, doc)
    # An associated type is part of its impl; a type alias in a module is a section.
    text = "impl Future for Sleep {\n    type Output = ();\n\n    fn poll(&mut self) {}\n}\n"
    sleep = split(text, name="sleep.rs")
    assert outline(sleep) == [("impl Future for Sleep", 1, 5), ("Sleep::poll(&mut self)", 4, 4)]
    assert "type Output = ();" in named(sleep, "impl Future for Sleep").content


GO = dedent("""
    package main

    // Reader reads.
    type Reader struct {
    \tn int
    }

    // Read reads into p.
    func (r *Reader) Read(p []byte) (n int, err error) {
    \treturn 0, nil
    }

    func ParseConfig(path string) error { return nil }
""")


def test_go_types_and_methods_with_receivers() -> None:
    doc = split(GO, name="reader.go")
    assert outline(doc) == [
        ("reader.go", 1, 1),
        ("type Reader struct", 3, 6),
        ("Reader.Read(p []byte) (n int, err error)", 8, 11),
        ("ParseConfig(path string) error", 13, 13),
    ]
    read = named(doc, "Reader.Read(p []byte) (n int, err error)")
    assert read.heading_path == ("Reader", "Read") and read.parent is None
    assert_no_line_lost(GO, doc)


JAVASCRIPT = dedent("""
    /** Parse a config. */
    export function parseConfig(text) {
      return JSON.parse(text);
    }

    export const loadConfig = async (path) => {
      return parseConfig(await read(path));
    };

    class Store {
      constructor(x) {
        this.x = x;
      }

      static open(path) {
        return new Store(path);
      }
    }
""")


def test_javascript_functions_arrows_classes() -> None:
    doc = split(JAVASCRIPT, name="config.jsx")
    assert outline(doc) == [
        ("parseConfig(text)", 1, 4),
        ("loadConfig(path)", 6, 8),
        ("class Store", 10, 18),
        ("Store.constructor(x)", 11, 13),
        ("Store.open(path)", 15, 17),
    ]
    assert_no_line_lost(JAVASCRIPT, doc)


TYPESCRIPT = dedent("""
    export interface Options {
      path: string;
    }

    export type Mode = "a" | "b";

    export abstract class Loader<T> {
      abstract load(path: string): T;

      parse(text: string): T {
        return JSON.parse(text);
      }
    }

    namespace Util {
      export function clamp(x: number): number {
        return x;
      }
    }

    enum Color {
      Red,
    }
""")


@pytest.mark.parametrize("name", ["loader.ts", "loader.tsx"])
def test_typescript_interfaces_types_classes_namespaces(name: str) -> None:
    doc = split(TYPESCRIPT, name=name)
    assert outline(doc) == [
        ("interface Options", 1, 3),
        ('type Mode = "a" | "b"', 5, 5),
        ("abstract class Loader<T>", 7, 13),
        ("Loader.parse(text: string): T", 10, 12),
        ("namespace Util", 15, 19),
        ("Util.clamp(x: number): number", 16, 18),
        ("enum Color", 21, 23),
    ]
    assert_no_line_lost(TYPESCRIPT, doc)


JAVA = dedent("""
    package a;

    /** A parser. */
    @Deprecated
    public class Parser<T> extends Base {
      private int depth;

      /** Parse it. */
      public static Config parse(String path) throws IOException {
        return null;
      }

      Parser() {}

      enum Kind {
        A;

        boolean on() {
          return true;
        }
      }
    }
""")


def test_java_classes_methods_constructors_enums() -> None:
    doc = split(JAVA, name="Parser.java")
    assert outline(doc) == [
        ("Parser.java", 1, 1),
        ("@Deprecated public class Parser<T> extends Base", 3, 22),
        ("Parser.parse(String path) throws IOException", 8, 11),
        ("Parser.Parser()", 13, 13),
        ("enum Parser.Kind", 15, 21),
        ("Parser.Kind.on()", 18, 20),
    ]
    assert_no_line_lost(JAVA, doc)


C = dedent("""
    #include <stdio.h>

    /* A point. */
    typedef struct point {
        int x;
    } point_t;

    static int *parse_config(const char *path)
    {
        return 0;
    }
""")


def test_c_structs_typedefs_functions() -> None:
    doc = split(C, name="config.c")
    assert outline(doc) == [
        ("config.c", 1, 1),
        ("typedef struct point", 3, 6),
        ("parse_config(const char *path)", 8, 11),
    ]
    assert_no_line_lost(C, doc)


CPP = dedent("""
    #ifndef CONFIG_H
    #define CONFIG_H
    namespace cfg {

    template <typename T>
    class Config : public Base {
     public:
      int get(int x) const {
        return x;
      }
      void parse();
    };

    }  // namespace cfg

    int cfg::Config::load(int n) {
      return n;
    }

    extern "C" {
    int c_entry(void) {
      return 1;
    }
    }
    #endif
""")


def test_cpp_namespaces_classes_qualified_methods_guards() -> None:
    doc = split(CPP, name="config.h")
    assert outline(doc) == [
        ("config.h", 1, 2),
        ("namespace cfg", 3, 14),
        ("class cfg::Config : public Base", 5, 12),
        ("cfg::Config::get(int x) const", 8, 10),
        ("cfg::Config::load(int n)", 16, 18),
        ("config.h", 20, 20),  # extern "C" {
        ("c_entry(void)", 21, 23),
        ("config.h", 24, 25),
    ]
    assert_no_line_lost(CPP, doc)


# -- real files ------------------------------------------------------------------------


def test_real_files_from_public_repositories() -> None:
    """Files from flask, tokio and pdf.js (tests/data/code/LICENSES.md)."""
    for path in sorted(DATA.glob("*.*")):
        if path.suffix == ".md":
            continue
        text = path.read_text(encoding="utf-8")
        assert_no_line_lost(text, split(text, name=path.name))
    flask = split((DATA / "flask_tag.py").read_text(encoding="utf-8"), name="flask_tag.py")
    register = next(s for s in flask.sections if s.heading_path[-1:] == ("register",))
    assert register.heading == (
        "TaggedJSONSerializer.register(self, tag_class: type[JSONTag],"
        " force: bool = False, index: int | None = None) -> None"
    )
    assert (register.start_line, register.end_line) == (256, 287)
    tokio = split((DATA / "lines_codec.rs").read_text(encoding="utf-8"), name="lines_codec.rs")
    assert ("pub struct LinesCodec", 7, 30) in outline(tokio)
    assert ("LinesCodec::new() -> LinesCodec", 33, 48) in outline(tokio)
    # pin_project! { … }: the structs inside the macro call are sections
    inspect = split((DATA / "inspect.rs").read_text(encoding="utf-8"), name="inspect.rs")
    assert ("pub struct InspectReader<R, F>", 9, 16) in outline(inspect)
    assert ("pub struct InspectWriter<W, F>", 91, 98) in outline(inspect)
    pdfjs = split(
        (DATA / "scripting_utils.js").read_text(encoding="utf-8"), name="scripting_utils.js"
    )
    assert ("ColorConverters.CMYK_RGB([c, y, m, k])", 79, 86) in outline(pdfjs)


def test_every_format_has_a_grammar_and_an_index_mapping() -> None:
    for fmt in formats.CODE_FORMATS:
        assert fmt.mime in CODE_TYPES
        for ext in fmt.extensions:
            grammar = grammar_for("x" + ext)
            assert grammar is not None
            assert grammar.language() is not None
    assert set(CODE_TYPES) == {f.mime for f in formats.CODE_FORMATS}


def test_comments_are_body_and_code_words_count_once() -> None:
    body, code = code_fields(
        '    def f(x):\n        """Doc line."""\n        # note\n        g(x); g(x)\n',
        "text/x-python",
    )
    assert body.split() == ['"""Doc', 'line."""', "#", "note"]
    assert code.split() == ["def", "f", "x", "g"]
    body, code = code_fields("/** A.\n * B. */\nint f(int a) { return a + a; } // c\n", "text/x-c")
    assert "B." in body and "return" in code and code.split().count("a") == 1


# -- hostile input ---------------------------------------------------------------------


def test_a_line_of_code_carriage_returns_and_a_missing_final_newline() -> None:
    text = "def a():\r\n    return 1\r\ndef b(): return 2"
    doc = split(text, name="m.py")
    assert outline(doc) == [("a()", 1, 2), ("b()", 3, 3)]


def test_parse_errors_keep_every_line_and_later_definitions() -> None:
    text = dedent("""
        def good(a):
            return a

        def broken(a):
            x = foo(1, 2
            return x

        class After:
            def method(self):
                return 1

        ))) = class ]
    """)
    doc = split(text, name="broken.py")
    assert CODE_INVALID in doc.warnings
    assert outline(doc)[:4] == [
        ("good(a)", 1, 2),
        ("broken(a)", 4, 6),
        ("class After", 8, 10),
        ("After.method(self)", 9, 10),
    ]
    assert_no_line_lost(text, doc)


def test_ten_thousand_nested_brackets_in_every_language() -> None:
    depth = 10_000
    for name, text in {
        "deep.py": "x = " + "[" * depth + "]" * depth + "\ndef after():\n    pass\n",
        "deep.rs": "fn f() {" + "{" * depth + "}" * depth + "}\nfn after() {}\n",
        "deep.c": "int x = "
        + "(" * depth
        + "1"
        + ")" * depth
        + ";\nint after(void) { return 0; }\n",
        "deep.java": "class A { int x = "
        + "(" * depth
        + "1"
        + ")" * depth
        + "; }\nclass after {}\n",
        "deep.go": "package a\nvar x = " + "(" * depth + "1" + ")" * depth + "\nfunc after() {}\n",
        "deep_macros.rs": "m! {\n" * depth + "fn f() {}\n" + "}\n" * depth + "fn after() {}\n",
    }.items():
        doc = split(text, name=name)
        assert outline(doc)[-1][0].startswith(("after", "class after")), name
        assert_no_line_lost(text, doc)
    # The JavaScript grammar gives up on this depth: the file is one section of top-level
    # code, which still holds every line.
    text = "const x = " + "(" * depth + ")" * depth + ";\nfunction after() {}\n"
    doc = split(text, name="deep.js")
    assert CODE_INVALID in doc.warnings
    assert_no_line_lost(text, doc)


def test_deeply_nested_classes_stop_at_a_bounded_depth() -> None:
    depth = 200
    text = "".join(" " * i + f"class C{i}:\n" for i in range(depth)) + " " * depth + "pass\n"
    doc = split(text, name="nest.py")
    assert [s.level for s in doc.sections] == list(range(1, MAX_DEPTH + 1))
    assert doc.sections[-1].heading == "class C0.C1.C2.C3.C4.C5"
    assert_no_line_lost(text, doc)


def test_nested_brackets_stay_within_a_memory_bound() -> None:
    """Peak RSS of a child process splitting 10,000 nested brackets (and 100,000 for the
    parser alone): generous, but far below what one Python object per bracket level
    held on a recursion stack would take."""
    script = textwrap.dedent("""
        import resource, sys
        from kbdb.ingest.code import split
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for depth in (10_000, 100_000):
            text = "x = " + "[" * depth + "]" * depth + "\\ndef after():\\n    pass\\n"
            doc = split(text, name="deep.py")
            assert doc.sections[-1].heading == "after()"
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(before // 1024, after // 1024)
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    before_mb, after_mb = int(out[0]), int(out[1])
    assert after_mb - before_mb < 200, (before_mb, after_mb)


def test_a_very_long_function_is_cut_into_parts_that_keep_their_lines() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(5_000))
    text = "def huge():\n" + body + "\ndef small():\n    pass\n"
    doc = split(text, name="huge.py")
    parts = [s for s in doc.sections if s.heading.startswith("huge()")]
    assert len(parts) == -(-5_001 // MAX_SECTION_LINES)
    assert parts[0].heading == "huge()" and parts[1].heading == "huge() (part 2)"
    assert parts[0].start_line == 1 and parts[-1].end_line == 5_001
    for a, b in zip(parts, parts[1:], strict=False):
        assert b.start_line == (a.end_line or 0) + 1
    assert all(len(p.content.splitlines()) <= MAX_SECTION_LINES for p in parts)
    assert_no_line_lost(text, doc)


# -- learn and search ------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "settings.py").write_text(
        dedent('''
            """Settings of the service."""


            def parse_config(path):
                """Read the settings file at ``path`` into a dict."""
                with open(path) as f:
                    return dict(line.split("=", 1) for line in f)


            def write_settings(values, path):
                with open(path, "w") as f:
                    f.write(str(values))
        ''')
    )
    (root / "tests" / "test_settings.py").write_text(
        dedent("""
            from settings import parse_config


            def test_parse_config_reads_pairs(tmp_path):
                assert parse_config(tmp_path / "a") == parse_config(tmp_path / "a")
                assert parse_config(tmp_path / "b") != parse_config(tmp_path / "c")
        """)
    )
    (root / "src" / "loader.rs").write_text(
        dedent("""
            pub struct Config {
                pub name: String,
            }

            impl Config {
                /// Parse a config from its text.
                pub fn parse(text: &str) -> Config {
                    Config { name: text.to_string() }
                }
            }

            pub fn load(path: &str) -> Config {
                Config::parse(path)
            }
        """)
    )
    return root


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    k = kbdb.KnowledgeBase.init(tmp_path / "kb")
    yield k
    k.close()


def top(kb: kbdb.KnowledgeBase, query: str) -> tuple[str, str]:
    item = kb.search(query, mode="lexical", limit=1).items[0]
    return item.docids[0], item.heading


def test_identifier_queries_find_their_definition(kb: kbdb.KnowledgeBase, repo: Path) -> None:
    report = kb.learn_path(repo)
    assert not report.files_skipped
    definition = ("src/settings.py", "parse_config(path)")
    assert top(kb, "parse_config") == definition
    assert top(kb, "ParseConfig") == definition
    assert top(kb, "config::parse") == ("src/loader.rs", "Config::parse(text: &str) -> Config")
    item = kb.search("parse_config", mode="lexical", limit=1).items[0]
    assert item.type == "text/x-python"
    # the snippet is cut from the docstring, the section's prose
    assert "Read the settings file" in item.snippet
    # the citation is the definition's lines in the file, as an editor numbers them
    lines = (repo / "src" / "settings.py").read_text().split("\n")
    assert item.source.path == str(repo / "src" / "settings.py")
    assert item.source.start_line is not None and item.source.end_line is not None
    assert lines[item.source.start_line - 1] == "def parse_config(path):"
    assert (
        lines[item.source.end_line - 1].strip() == 'return dict(line.split("=", 1) for line in f)'
    )
    (section,) = kb.recall(item.kbid).sections
    numbered = numbered_lines(section.content, section.type, section.source)
    assert numbered is not None
    assert all(lines[n - 1] == row for n, row in numbered)


def test_a_binary_file_named_py_is_skipped(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "blob.py").write_bytes(b"\x7fELF\x00\x01\x02")
    (folder / "latin.py").write_bytes(b"x = '\xe9'\n")
    report = kb.learn_path(folder)
    codes = {Path(s.path).name: s.code for s in report.files_skipped}
    assert codes == {"blob.py": "BINARY_FILE", "latin.py": "INVALID_UTF8"}


def test_without_the_extra_code_is_left_out_quietly_or_named(
    kb: kbdb.KnowledgeBase, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "README.md").write_text("# Readme\n\nThe service reads settings.\n")
    monkeypatch.setattr(formats, "_importable", lambda module: module == "kbdb")
    report = kb.learn_path(repo)
    assert not report.files_skipped
    assert {d.docid for d in kb.documents(limit=100).items} == {"README.md"}
    (skipped,) = kb.learn_path(repo / "src" / "settings.py").files_skipped
    assert skipped.code == "UNSUPPORTED_TYPE"
    assert "pip install 'kbdb[code]'" in skipped.reason


def test_watch_learns_a_new_python_file(kb: kbdb.KnowledgeBase, repo: Path) -> None:
    w = Running(kb, repo)
    try:
        (repo / "src" / "extra.py").write_text("def frobnicate_widget(x):\n    return x\n")
        wait_for(lambda: "src/extra.py" in hits(kb, "frobnicate_widget"), what="new .py file")
        assert top(kb, "frobnicate_widget") == ("src/extra.py", "frobnicate_widget(x)")
    finally:
        w.close()


def test_code_is_not_checked_for_near_duplicates(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    """Source repeats itself by design: two copies of a function are not reported, while
    the same words as Markdown notes are."""
    body = "\n".join(f"    total = total + value_{i} * weight_{i}" for i in range(30))
    folder = tmp_path / "dups"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.py").write_text(f"def score_{name}(values):\n{body}\n    return total\n")
        (folder / f"{name}.md").write_text(f"# Scoring {name}\n\n{body}\n")
    report = kb.learn_path(folder)
    near = {s.kbid: s.near_duplicates for s in report.sections}
    recalled = {s.kbid: s.type for s in kb.recall(*near).sections}
    assert any(near[k] for k, t in recalled.items() if t == "text/markdown")
    assert not any(near[k] for k, t in recalled.items() if t == "text/x-python")


def test_a_type_name_finds_the_type_before_its_constructor_and_impl(
    kb: kbdb.KnowledgeBase, repo: Path
) -> None:
    """The heading boost compares a code section's definition names, not its signature:
    ``Config`` is the struct, not ``Config::parse(text) -> Config`` nor ``impl Config``;
    ``Config::parse`` is the method."""
    kb.learn_path(repo)
    hit = kb.search("Config", mode="lexical", limit=1, explain=True).items[0]
    assert hit.heading == "pub struct Config"
    assert hit.explain is not None and hit.explain.get("heading_boost", 1.0) > 1.0
    method = kb.search("Config::parse", mode="lexical", limit=1, explain=True).items[0]
    assert method.heading == "Config::parse(text: &str) -> Config"
    assert method.explain is not None and method.explain.get("heading_boost", 1.0) > 1.0


def test_recall_lines_number_a_class_without_its_methods_as_the_file_does(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    """A class's section leaves out its methods (sections of their own): its lines after
    the first method are not contiguous, and each is still numbered as in the file."""
    folder = tmp_path / "flask"
    folder.mkdir()
    source = folder / "flask_tag.py"
    source.write_bytes((DATA / "flask_tag.py").read_bytes())
    kb.learn_path(folder)
    hit = kb.search("TaggedJSONSerializer", mode="lexical", limit=1).items[0]
    assert hit.heading == "class TaggedJSONSerializer"
    (section,) = kb.recall(hit.kbid).sections
    numbered = numbered_lines(section.content, section.type, section.source)
    assert numbered is not None
    lines = source.read_text().split("\n")
    assert numbered[0] == (section.source.start_line, "class TaggedJSONSerializer:")
    assert all(lines[n - 1] == row for n, row in numbered)
    assert len(numbered) < section.source.end_line - section.source.start_line + 1
    # Once the file has changed, the lines are not guessed.
    source.write_text("# rewritten\n")
    assert numbered_lines(section.content, section.type, section.source) is None

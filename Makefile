# The two commands of the README: `make demo` (run the main job on the bundled
# examples) and `make test` (run every test). Both create the environment first
# (the demo's without torch and the test tools).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: env demo test bench bench-bugs docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

env: $(STAMP)

# The demo needs only the package (no torch, no test tools): a fresh clone reaches its
# first finding in about a minute instead of five.
BASE := $(VENV)/.installed-base
$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(BASE)

demo: $(BASE)
	$(BIN)/traindoctor check examples/ ; test $$? -le 1
	$(BIN)/traindoctor diagnose examples/tracebacks/cuda_oom.log ; test $$? -le 1

# Every Python test, then the extension's end-to-end tests in a real VS Code
# (code-server + Chromium, installed into .e2e/ on first run; E2E=0 skips them).
E2E ?= 1
test: $(STAMP)
	@echo "make test: about 20 minutes on 2 cores; the VS Code tests need Node >= 20 with npm, and Chromium or root (apt-get install chromium); E2E=0 skips them"
	$(BIN)/python -m pytest -n 2 -q
	@if [ "$(E2E)" = 1 ]; then bash scripts/e2e.sh; else echo "skipping the VS Code e2e tests (E2E=0)"; fi

# The peers we compare against live in their own environment: TorchFix pins an
# older libcst and Fixit's server an older pygls than ours.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed:
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet torchfix 'fixit[lsp]'
	touch $@

bench: $(STAMP) $(BENCH_VENV)/.installed
	$(BIN)/python bench/bench_lint.py
	$(BIN)/python bench/bench_diagnose.py
	$(BIN)/python bench/bench_lsp_latency.py
	$(BIN)/python bench/bench_live_overhead.py
	$(BIN)/python bench/bench_watch_overhead.py
	$(MAKE) bench-accuracy

# Recall on real bug-fix commits (bench/bugs/README.md): needs the repositories fetched
# into /work/.mirror; extractions and findings are cached; not part of `make test`.
.PHONY: bench-bugs bench-accuracy
bench-bugs: $(STAMP)
	$(BIN)/python bench/bugs/score.py --json bench/bugs/results.json

# Precision on both halves of the ecosystem check, recall on real bug fixes, fixes that
# broke code: one table (bench/accuracy.py; sources from `bench/ecosystem.py extract`).
BUGS_JSON ?= bench/bugs/results.json
bench-accuracy: bench-bugs
	$(BIN)/python bench/accuracy.py --bugs $(BUGS_JSON) $(ACCURACY_ARGS)

docs: $(STAMP)
	$(BIN)/python -m traindoctor.docs

clean:
	rm -rf $(VENV) $(BENCH_VENV) build *.egg-info server/*.egg-info

# The two commands of the README: `make demo` (run the main job on the bundled
# examples) and `make test` (run every test). Both create the environment first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: env demo test bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

env: $(STAMP)

demo: $(STAMP)
	$(BIN)/traindoctor check examples/ ; test $$? -le 1
	$(BIN)/traindoctor diagnose examples/tracebacks/cuda_oom.log ; test $$? -le 1

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

docs: $(STAMP)
	$(BIN)/python -m traindoctor.docs

clean:
	rm -rf $(VENV) build *.egg-info server/*.egg-info

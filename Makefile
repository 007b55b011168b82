# Developer entry points. `make demo` and `make test` do all the set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# CPU build of PyTorch, pinned: an unpinned torch pulls a multi-GB CUDA build. Where no
# local CPU wheel is offered to pip (PIP_FIND_LINKS, e.g. /opt/wheels), take it from the
# PyTorch CPU index, since PyPI's Linux torch wheel is the CUDA build.
TORCH  ?= torch==2.13.0
LOCAL_TORCH := $(wildcard $(or $(PIP_FIND_LINKS),/opt/wheels)/torch-2.13.0*cpu*.whl)
TORCH_INDEX ?= $(if $(LOCAL_TORCH),,--index-url https://download.pytorch.org/whl/cpu)
# Test what ships: every package the offline kit pins (installer/requirements.lock) is installed
# at that version, through a pip constraints file made from the lock (constraints cannot carry
# hashes). Packages the lock does not list (pytest, ruff, ...) are free. torch: TORCH above.
LOCK        := installer/requirements.lock
CONSTRAINTS := $(VENV)/constraints.txt

.PHONY: demo test venv lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) installer/lockfile.py constraints --drop torch $(LOCK) > $(CONSTRAINTS)
	$(PY) -m pip install --quiet "$(TORCH)" $(TORCH_INDEX)
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) -e ".[gui,test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/latent-synth demo --out demo-output

test: $(STAMP)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check engine desktop tests benchmarks scripts
	$(VENV)/bin/mypy engine
	QT_QPA_PLATFORM=offscreen MPLBACKEND=Agg $(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/bench_flow.py
	$(PY) benchmarks/bench_audit.py
	$(PY) benchmarks/bench_pipeline.py
	$(PY) benchmarks/bench_meta_simulation.py --replicates 20
	$(PY) benchmarks/bench_dp.py

clean:
	rm -rf $(VENV) demo-output build dist *.egg-info

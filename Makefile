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

.PHONY: demo test venv venv-bench lint bench bench-family clean mutate mutate-check

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
	QT_QPA_PLATFORM=offscreen MPLBACKEND=Agg $(PY) -m pytest -q -n auto --maxprocesses=4

bench: $(STAMP)
	$(PY) benchmarks/bench_flow.py
	$(PY) benchmarks/bench_audit.py
	$(PY) benchmarks/bench_pipeline.py
	$(PY) benchmarks/bench_meta_simulation.py --replicates 20
	$(PY) benchmarks/bench_dp.py

# The peers' venv for benchmarks/bench_family.py (docs/bench.md): SDV, SurvSet, scikit-survival and
# MOSTLY AI's engine (without its GPU / language-model extras: torchvision, torchaudio, xgrammar),
# reading the main venv's packages through a .pth line. torch stays the pinned CPU build.
BENCH_VENV ?= .venv-bench
venv-bench: $(STAMP)
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet "$(TORCH)" $(TORCH_INDEX)
	$(BENCH_VENV)/bin/python -m pip install --quiet "$(TORCH)" sdv==2.0.0 survset==0.2.11 \
		scikit-survival==0.28.0 transformers==5.24.0 accelerate==1.15.0 datasets==5.2.0 \
		peft==0.21.2 opacus==1.6.0 json-repair==0.64.6 psutil pyarrow
	$(BENCH_VENV)/bin/python -m pip install --quiet --no-deps mostlyai-engine==2.7.3
	$(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > \
		$$($(BENCH_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz_main_venv.pth

bench-family: venv-bench
	nice -n 10 $(BENCH_VENV)/bin/python benchmarks/bench_family.py --seeds 6

# Mutation testing of the privacy-critical core (docs/mutation.md). mutmut runs, per mutant, only
# the tests that call the mutated function, one worker (2-core machines are shared). Verdicts are
# stored in mutants/, but mutmut 3.8.1 re-tests every mutant named on its command line, so a long
# scope is run in chunks (MUTATE_SCOPE="glob ..."; docs/mutation.md lists them).
# MUTATE_SCOPE: mutant-name globs (module.x_function*); MUTATE_SCOPE=all mutates every function
# of the modules listed under [tool.mutmut] in pyproject.toml.
MUTATE_BUDGET_S ?= 900
MUTATE_SCOPE ?= engine.flows.generate.* engine.privacy.audit.x_select_w__* engine.privacy.measure.*passes__* \
	engine.privacy.decision.* engine.privacy.measure.x_membership_auc__* engine.privacy.audit.x_epsilon_for_copies__* \
	engine.privacy.release.x_record_ranks__* engine.privacy.release.x_release_metrics__* \
	engine.privacy.release.x_protect_outliers__* engine.privacy.release.x_epsilon_statement__* \
	engine.search.neighbours.x_count_closer__* engine.search.neighbours.x_kth_neighbour_distances__* \
	engine.privacy.dp.accountant.x_gdp_mu__* engine.privacy.dp.accountant.x_delta_for_epsilon__* \
	engine.privacy.dp.accountant.x_sigma_for_epsilon__* engine.privacy.dp.accountant.x__calibrated_sigma__* \
	engine.privacy.dp.accountant.x__bisect_sigma__* engine.privacy.dp.accountant.x_rdp_epsilon__* \
	engine.privacy.dp.train.x_clip_gradients__* engine.files.write.x_escape_formula__* \
	engine.disclosure.counts.x_safe_count__* engine.disclosure.counts.x_small_count__* \
	engine.disclosure.counts.x_safe_total__* engine.disclosure.ranges.x_safe_bounds__* \
	engine.disclosure.copies.x_copy_masks__* engine.disclosure.ranges.x_coarse_km_grid__* engine.stats.meta.x_pool__*
mutate: $(STAMP)
	$(PY) -m pip install --quiet -e ".[mutate]"
	timeout $(MUTATE_BUDGET_S) $(VENV)/bin/mutmut run --max-children 1 \
		$(if $(filter all,$(MUTATE_SCOPE)),,$(foreach g,$(MUTATE_SCOPE),"$(g)")) || test $$? = 124
	$(VENV)/bin/mutmut results

# Re-check one mutant (MUTANT=<name> from `mutmut results`) with mutmut's own switch, against the
# current tests (copied into mutants/ first): fast, no statistics or clean run (docs/mutation.md).
MUTATE_TESTS ?= tests/test_release_metrics.py tests/test_outlier_protection.py \
	tests/test_epsilon.py tests/test_generate.py
mutate-check:
	test -d mutants && test -n "$(MUTANT)"
	cp tests/*.py mutants/tests/
	cd mutants && MUTANT_UNDER_TEST="$(MUTANT)" MPLBACKEND=Agg $(abspath $(PY)) -m pytest -x -q \
		-p no:cacheprovider -o addopts= -m "not slow" $(MUTATE_TESTS)

clean:
	rm -rf $(VENV) demo-output build dist *.egg-info mutants

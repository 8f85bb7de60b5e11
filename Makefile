# make run   - simulate the paper-sized study (28 participants, 31 sketches x 40 images,
#              anchoring) and analyse it; tables, figures and report.html in build/demo/analysis/
# make test  - install everything and run the test suite
# Both create the virtual environment .venv and install what is missing, apt packages included.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   := build/demo
SEED   ?= 2011

# Debian packages the project needs at run or test time.
APT_PACKAGES :=

.PHONY: run test lint bench install clean

install: $(STAMP)

$(STAMP): pyproject.toml scripts/ensure-apt.sh
	@bash scripts/ensure-apt.sh $(APT_PACKAGES)
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "sbir-study needs Python 3.11 or newer, found " + sys.version.split()[0]'
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || bash scripts/ensure-apt.sh python3-venv
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

run: $(STAMP)
	rm -rf $(DEMO)
	$(BIN)/sbir-study simulate --out $(DEMO)/data --seed $(SEED)
	$(BIN)/sbir-study analyze $(DEMO)/data --out $(DEMO)/analysis
	@echo
	@echo "Ground truth:      $(DEMO)/analysis/ground_truth.csv (and ground_truth.qrels for trec_eval)"
	@echo "Statistics tables: $(DEMO)/analysis/*.csv, headline numbers in $(DEMO)/analysis/summary.json"
	@echo "Figures:           $(DEMO)/analysis/figures/ (Figs. 4-8, .png and .pdf)"
	@echo "Report:            $(DEMO)/analysis/report.html (open it in a browser)"

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check analysis study stimuli tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_pairwise.py
	$(BIN)/python benchmarks/bench_analyze.py
	$(BIN)/python benchmarks/bench_figures_power.py
	$(BIN)/python benchmarks/bench_stimuli.py

clean:
	rm -rf build .pytest_cache

# make run   - simulate the paper-sized study (28 participants, 31 sketches x 40 images,
#              anchoring) and analyse it; tables, figures and report.html in build/demo/analysis/;
#              then score the baseline engine under every distance on the generated set
#              (build/demo/retrieval/evaluation/); what make session and make serve-demo
#              recorded in build/demo stays
# make test  - install everything and run the test suite
# make install - the virtual environment .venv with everything, at the versions of
#              constraints/lock.txt (those the tests passed with)
# make lock  - refresh constraints/lock.txt: the newest versions pyproject.toml allows,
#              installed into a fresh virtual environment and frozen
# make docs  - rewrite every number README.md and docs/*.md quote from make run's outputs, and
#              the README's Fig. 5 (scripts/update_docs.py); runs make run first when its
#              outputs are missing or older than the code
# make session - a demo rating session in a PsychoPy window (under Xvfb, answered by a
#              simulated participant, when there is no display)
# make serve-demo - the demo protocol as an online study on http://127.0.0.1:8000/ (status page
#              /admin); Ctrl-C stops it, build/demo/online keeps what was recorded
# Both create the virtual environment .venv and install what is missing, apt packages included.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   := build/demo
RETRIEVAL := $(DEMO)/retrieval
SEED   ?= 2011
NODE   := .node
BIDS_VALIDATOR := 1.15.0

# Debian packages the project needs at run or test time: a virtual X display with Mesa for
# PsychoPy's window, and the libraries of Psychtoolbox's keyboard backend; Chromium and its
# driver for the browser session's tests, PostgreSQL for the multi-server database's tests,
# GNU Octave, in which the tests run the HPatches reference scoring code; poppler-utils
# (pdffonts, pdfinfo, pdftoppm), with which the tests read the fonts of the figures' PDFs
# and the pages of a report printed by Chromium; R with psych, whose ICC the tests compare
# the intraclass correlations with.
APT_PACKAGES := xvfb xauth libgl1-mesa-dri libjack-jackd2-0 libasound2 chromium chromium-driver \
	postgresql octave poppler-utils r-base-core r-cran-psych
WEB    := study/online/web

.PHONY: run test session serve-demo lint bench install lock docs clean

install: $(STAMP)

# The editable install is a tree of links to the package's files (setuptools' strict mode,
# under build/__editable__.*), which type checkers and IDEs follow as they follow any
# installed package; a file added, removed or renamed is linked by installing again, which
# $(PACKAGE_FILES) tells make to do.
PACKAGE_FILES := $(VENV)/.package-files
$(shell mkdir -p $(VENV) && git ls-files --cached --others --exclude-standard src foundation \
	analysis stimuli study cli 2>/dev/null | sort > $(PACKAGE_FILES).new && \
	{ cmp -s $(PACKAGE_FILES).new $(PACKAGE_FILES) || mv $(PACKAGE_FILES).new $(PACKAGE_FILES); }; \
	rm -f $(PACKAGE_FILES).new)

$(STAMP): pyproject.toml Makefile constraints/lock.txt scripts/ensure-apt.sh $(WEB)/package.json \
		$(WEB)/package-lock.json $(PACKAGE_FILES)
	@bash scripts/ensure-apt.sh $(APT_PACKAGES)
	@command -v npm >/dev/null 2>&1 || bash scripts/ensure-apt.sh nodejs npm
	@# jsPsych and its plugins for the browser session, as pinned by the lockfile; installed
	@# before pip so that the package data holds them.
	npm ci --silent --no-audit --no-fund --prefix $(WEB)
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "sbir-study needs Python 3.11 or newer, found " + sys.version.split()[0]'
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || bash scripts/ensure-apt.sh python3-venv
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# The versions CI tested (make lock refreshes them); pyproject.toml holds the ranges.
	$(BIN)/python -m pip install --quiet -c constraints/lock.txt -e '.[all,test]' \
		--config-settings editable_mode=strict
	@# The BIDS validator checks the recorded datasets in the tests (tests/test_session.py).
	@test -x $(NODE)/node_modules/.bin/bids-validator || npm install --silent --no-audit \
		--no-fund --prefix $(NODE) bids-validator@$(BIDS_VALIDATOR)
	@touch $@

# The lock is made from scratch, never from .venv (which may hold more): what a fresh machine
# gets today within pyproject.toml's ranges. pip, setuptools and the project itself are left
# out; a virtual environment brings its own.
LOCK_VENV := build/lock-venv
LOCK_PYTHON = $$($(LOCK_VENV)/bin/python -c 'import platform; print(platform.python_version())')
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LOCK_VENV)/bin/python -m pip install --quiet -e '.[all,test]'
	{ echo "# Every package of pip install -e '.[all,test]', transitive ones included, for"; \
	  echo "# Python $(LOCK_PYTHON) on Linux: the versions the tests passed with. make install"; \
	  echo "# installs these; make lock refreshes them (then run make test before committing)."; \
	  $(LOCK_VENV)/bin/python -m pip freeze --exclude-editable; } > constraints/lock.txt.new
	mv constraints/lock.txt.new constraints/lock.txt
	rm -rf $(LOCK_VENV)

# make run replaces only the folders it writes: make session's and make serve-demo's
# recordings under $(DEMO) stay.
run: $(STAMP)
	rm -rf $(DEMO)/data $(DEMO)/analysis $(RETRIEVAL)
	$(BIN)/sbir-study simulate --out $(DEMO)/data --seed $(SEED)
	$(BIN)/sbir-study analyze $(DEMO)/data --out $(DEMO)/analysis
	@# The retrieval benchmark: simulated participants rate the generated default set, and
	@# the baseline engine is scored under every distance against their ground truth.
	$(BIN)/sbir-study stimuli generate --out $(RETRIEVAL)/stimuli --seed $(SEED)
	$(BIN)/sbir-study simulate --stimuli $(RETRIEVAL)/stimuli --out $(RETRIEVAL)/data --seed $(SEED)
	$(BIN)/sbir-study analyze $(RETRIEVAL)/data --out $(RETRIEVAL)/analysis --no-figures
	$(BIN)/sbir-study baseline --stimuli $(RETRIEVAL)/stimuli --distance all --out $(RETRIEVAL)/runs
	$(BIN)/sbir-study evaluate --ground-truth $(RETRIEVAL)/analysis/ground_truth.csv \
		--ratings $(RETRIEVAL)/data --out $(RETRIEVAL)/evaluation $(RETRIEVAL)/runs/*.run
	@echo
	@echo "Ground truth:      $(DEMO)/analysis/ground_truth.csv (ground_truth.qrels and ground_truth_binary.qrels for trec_eval)"
	@echo "Statistics tables: $(DEMO)/analysis/*.csv, headline numbers in $(DEMO)/analysis/summary.json"
	@echo "Figures:           $(DEMO)/analysis/figures/ (Figs. 4-8, .png and .pdf)"
	@echo "Report:            $(DEMO)/analysis/report.html (open it in a browser)"
	@echo "Retrieval:         $(RETRIEVAL)/evaluation/report.html (the baseline under every distance)"

# The last file make run writes: missing after a failed run, older than the code after an edit.
DEMO_DONE := $(RETRIEVAL)/evaluation/summary.csv
DEMO_CODE := $(shell find foundation analysis stimuli study cli src -name '*.py' \
	-not -path '*/node_modules/*') pyproject.toml Makefile

$(DEMO_DONE): $(STAMP) $(DEMO_CODE)
	$(MAKE) run

docs: $(DEMO_DONE)
	$(BIN)/python scripts/update_docs.py

session: $(STAMP)
	rm -rf $(DEMO)/session-stimuli $(DEMO)/session $(DEMO)/session-analysis
	$(BIN)/sbir-study stimuli generate --out $(DEMO)/session-stimuli --sketches 4 --images 10 \
		--anchor-sketches 1 --seed $(SEED)
	@if [ -n "$$DISPLAY" ]; then \
		$(BIN)/sbir-study run --protocol protocols/demo.toml --stimuli $(DEMO)/session-stimuli \
			--participant demo --data $(DEMO)/session --windowed; \
	else \
		echo "No display: running under Xvfb with a simulated participant"; \
		xvfb-run -a -s "-screen 0 1920x1200x24" $(BIN)/sbir-study run --protocol protocols/demo.toml \
			--stimuli $(DEMO)/session-stimuli --participant demo --data $(DEMO)/session \
			--windowed --simulate; \
	fi
	$(BIN)/sbir-study analyze $(DEMO)/session --out $(DEMO)/session-analysis --no-figures

serve-demo: $(STAMP)
	@test -f $(DEMO)/online-stimuli/SHA256SUMS || $(BIN)/sbir-study stimuli generate \
		--out $(DEMO)/online-stimuli --sketches 4 --images 10 --anchor-sketches 1 --seed $(SEED)
	$(BIN)/sbir-study serve --protocol protocols/demo.toml --stimuli $(DEMO)/online-stimuli \
		--data $(DEMO)/online --host 127.0.0.1 --port 8000

# The suite in two passes at the same time (pytest-xdist), each module's (or class's) tests
# in one worker (they share its fixtures): the window and browser tests, which mostly wait on
# the clock and are timed to the millisecond, at normal priority, a worker per core; every
# other test, which computes, at a lower one (nice), so that it takes only the CPU the timed
# tests leave, two workers per core (its tests wait on the processes they start: two per
# core keep the cores busy). The timed pass's output follows the other's. Both passes run;
# make test fails when either fails. Python keeps the tests' compiled and assertion-rewritten
# modules (in __pycache__/, ignored by git) even where PYTHONDONTWRITEBYTECODE is set: each
# worker otherwise rewrites all of them again, 10 of its 15 s of collection.
PYTEST := $(BIN)/python -m pytest -q --tb=short -rfE --durations=25 --dist loadscope \
	--no-loadscope-reorder
# The modules of the window and browser tests (tests/conftest.py refuses such a test elsewhere).
TIMED_MODULES = $(shell grep -v '^\#' tests/timed.txt)
COMPUTING_WORKERS := $(shell echo $$(( $$(nproc) * 2 )))
test: $(STAMP)
	@unset PYTHONDONTWRITEBYTECODE; status=0; started=$$(date +%s); timed_log=$$(mktemp); \
	$(PYTEST) --numprocesses auto -m "realtime or browser" $(TIMED_MODULES) > $$timed_log 2>&1 & timed=$$!; \
	trap 'kill $$timed 2>/dev/null; rm -f $$timed_log' EXIT INT TERM; \
	nice -n 10 $(PYTEST) --numprocesses $(COMPUTING_WORKERS) -m "not realtime and not browser" || status=$$?; \
	wait $$timed || status=$$?; \
	echo; echo "make test: the window and browser tests (beside the others):"; \
	cat $$timed_log; \
	echo "make test: the suite took $$(( $$(date +%s) - started )) s"; \
	exit $$status

# The linter, the formatter's check and the type checker (each configured in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_pairwise.py
	$(BIN)/python benchmarks/bench_analyze.py
	$(BIN)/python benchmarks/bench_agreement.py
	$(BIN)/python benchmarks/bench_figures_power.py
	$(BIN)/python benchmarks/bench_stimuli.py
	$(BIN)/python benchmarks/bench_session.py
	$(BIN)/python benchmarks/bench_evaluate.py
	$(BIN)/python benchmarks/bench_comparisons.py

# The editable install's links live under build/: removing them removes the install's stamp.
clean:
	rm -rf build .pytest_cache $(STAMP)

# The two commands: `make test` and `make book`. Both create .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export MPLBACKEND := Agg

.PHONY: test book notebooks lint data bench clean check-book chromium bytecode gpu-check course

# uv installs the frozen set (constraints.txt) in half pip's time; torch's wheel comes from wherever
# pip finds it (on these machines the CPU build on disk, which uv does not look for). Without uv
# (no index to fetch it from) pip installs the same set. Both compile the bytecode at install:
# where PYTHONDONTWRITEBYTECODE is set nothing else writes it, and every process would compile
# torch and transformers from source (an import of both took 4.5 s instead of 2.2 s).
$(STAMP): pyproject.toml setup.py constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip download --quiet --no-deps -c constraints.txt torch -d $(VENV)/wheels
	($(BIN)/pip install --quiet uv==0.13.9 && $(BIN)/uv pip install --python $(BIN)/python --quiet \
	  --compile-bytecode --find-links $(VENV)/wheels -c constraints.txt -e .) \
	  || $(BIN)/pip install --quiet -c constraints.txt -e .
	rm -rf $(VENV)/wheels
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# Debian's chromium for the browser checks (never a browser download); best effort here, and the
# browser tests say so when it is still missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get install -y -q chromium >/dev/null 2>&1 || \
	  (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) || \
	  echo "chromium could not be installed; the browser checks will not run"

# One pytest worker per core, each test file on one worker (files share module fixtures); each
# worker's torch and BLAS keep to one thread (tests/conftest.py).
# littlekit's own bytecode, which nothing writes where PYTHONDONTWRITEBYTECODE is set (0.2 s per process)
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q littlekit >/dev/null

test: $(STAMP) chromium bytecode
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=15

# The GPU check (benchmarks/gpu_check.py): bf16 + compile + Muon, resume, the fused loss, stage 3 on
# CUDA, two processes, FSDP/DDP on several GPUs. On a GPU machine whose python already has a CUDA
# torch: make gpu-check GPU_PY=python3. REHEARSE=1 runs the same steps on the CPU at toy sizes.
GPU_PY ?= $(BIN)/python
gpu-check:
	PYTHONPATH=. $(GPU_PY) benchmarks/gpu_check.py $(if $(REHEARSE),--rehearse)

lint: $(STAMP)
	$(BIN)/ruff check littlekit tests benchmarks book notebooks

# Every page of the built book in headless Chromium: JavaScript errors, images, internal links,
# search, code lines cut off, the download and launch buttons of notebook pages, the run-time
# page; a screenshot per page in _build/check/.
check-book: $(STAMP) chromium
	test -f _build/html/index.html || (echo "no built book: run make book first" && exit 1)
	$(BIN)/python book/tools/check_book.py --html _build/html --out _build/check

# Execute the chapters and the course exercises on the embedded default, each only when its inputs
# changed (its file, littlekit, data/, pyproject.toml, the chapters it reads): an unchanged book
# re-executes nothing; FORCE=1 executes all. A notebook starts when the chapters it reads are done;
# single-threaded ones run beside another. The executed copies (outputs, figures) go to
# book/executed/, which the table of contents publishes; sources stay clean. Each time is printed.
notebooks: $(STAMP) bytecode
	mkdir -p book/executed
	$(BIN)/python book/tools/run_notebooks.py $(if $(FORCE),--force,)

book: notebooks
	$(BIN)/python book/tools/scorecard.py
	$(BIN)/python book/tools/run_times.py
	$(BIN)/littlekit course build --out book/executed/course
	$(BIN)/python book/tools/course_downloads.py
	$(BIN)/jupyter-book build .
	test -f _build/html/index.html
	@echo "book: $$(pwd)/_build/html/index.html"

# The course's two editions of every exercise notebook (littlekit.course, with nbgrader): course/student/
# (answers blanked, hidden tests and instructor cells left out), course/instructor/ (everything) and
# nbgrader's folder course/nbgrader/. Grade a folder of submissions SUBS/<student>/<notebook>.ipynb
# with `.venv/bin/littlekit course grade SUBS --out grades` (scores.csv, predictions.csv, feedback/).
course: $(STAMP)
	$(BIN)/littlekit course build --out course

# Rebuild data/ from the real files (needs a checkout of the shared data).
data: $(STAMP)
	$(BIN)/littlekit data build --from $${LITTLEKIT_SHARED:-../shared/data} --out data --force

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf _build runs book/executed/.keys book/executed/exercises/.keys

# Every set-up step lives here: `make run` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
HOST   ?= 127.0.0.1
PORT   ?= 9092
DATA   ?= ./data

.PHONY: setup run test test-fast lint bench bench-report report clean

setup: $(STAMP)

# Re-installs only when pyproject.toml changes; otherwise `make setup` is a no-op.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "installing groupcoord (editable, with dev extras) into $(VENV) ..."
	@$(BIN)/python -m pip install --quiet -e '.[dev]'
	@command -v java >/dev/null 2>&1 || echo "note: Java (17+) not found; 'groupcoord report' (PySpark) needs it: apt-get install openjdk-17-jre-headless"
	@touch $(STAMP)

run: setup
	$(BIN)/groupcoord serve --host $(HOST) --port $(PORT) --data-dir $(DATA)

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not integration and not spark"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Benchmarks print tables (never timed tests). Set TANSU_BIN to a tansu binary to include the peer rows.
bench: setup
	$(BIN)/python bench/codec.py
	$(BIN)/python bench/coordinator.py
	$(BIN)/python bench/data_plane.py
	$(BIN)/python bench/log.py
	$(BIN)/python bench/assignors.py
	$(BIN)/python bench/abuse.py

bench-report: setup
	$(BIN)/python bench/journal_gen.py --out /tmp/groupcoord-bench-journal --events 10000000 --groups 10000
	$(BIN)/python -m groupcoord.pipeline.bench --data-dir /tmp/groupcoord-bench-journal

report: setup
	$(BIN)/groupcoord report --data-dir $(DATA) --out ./report

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis

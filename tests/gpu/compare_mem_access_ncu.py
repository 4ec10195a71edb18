"""Compare mem_access_profile (CPU model) with ncu's global load/store counters on a real GPU.

For each task below, on the same shape and config: mem_access_profile runs on CPU (Triton's interpreter +
cuda:90 TTGIR layouts, every program analysed) and ncu_profile runs the kernel on the GPU, reading
l1tex__t_{requests,sectors}_pipe_lsu_mem_global_op_{ld,st}.sum. The model counts what ncu counts for
plain LDG/STG, so for tasks without cp.async / TMA the four totals must be equal; for the others the
table shows both and the test only reports.

Run on the H200 from the repository root (needs ncu on the PATH):

    .venv/bin/python -m pytest tests/gpu/compare_mem_access_ncu.py -m gpu -q -s
    .venv/bin/python tests/gpu/compare_mem_access_ncu.py          # the table only

With KPILOT_FIXTURE_OUT=<dir> set, the rows are also written to <dir>/mem_access_vs_ncu.json.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from services.toolrunner.mem_access import run as mem_access
from services.toolrunner.ncu_profile import run as ncu_profile
from shared.tools.memaccess import MemAccessInput
from shared.tools.profile import NcuProfileInput

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "tasks"
METRICS = [f"l1tex__t_{w}_pipe_lsu_mem_global_op_{o}.sum" for o in ("ld", "st") for w in ("requests", "sectors")]
# (task, config overrides, must match exactly): plain LDG/STG kernels must match; the examples with
# loops and dots may use cp.async (counted by ncu under ..._op_ldgsts) and are reported only.
CASES: list[tuple[Path, dict[str, int], bool]] = [
    (FIX / "probe_add.py", {}, True),
    (FIX / "probe_softmax.py", {}, True),
    (FIX / "probe_transpose.py", {}, True),
    (FIX / "mem_strided.py", {}, True),
    (FIX / "mem_transpose_hidden.py", {}, True),
    (FIX / "mem_bias_add.py", {}, True),
    (ROOT / "examples" / "vector_add.py", {}, True),
    (ROOT / "examples" / "vector_add.py", {"BLOCK": 1024}, True),
    (ROOT / "examples" / "row_softmax.py", {}, False),
    (ROOT / "examples" / "matmul.py", {}, False),
    (ROOT / "examples" / "attention_fwd.py", {}, False),
]


@dataclass
class Row:
    task: str
    config: dict[str, int]
    kernel: str
    model: dict[str, int]
    ncu: dict[str, float | None]
    exact: bool
    error: str = ""

    def matches(self) -> bool:
        return all(self.ncu.get(k) == v for k, v in self.model.items())


def compare(task: Path, config: dict[str, int], exact: bool, shape: str = "micro") -> list[Row]:
    prof = mem_access(MemAccessInput(task_path=str(task), shape=shape, config=config, max_programs=1 << 30))
    rows = []
    for k in prof.kernels:
        model = {METRICS[0]: k.load_requests, METRICS[1]: k.load_sectors,
                 METRICS[2]: k.store_requests, METRICS[3]: k.store_sectors}
        row = Row(task=task.name, config=config, kernel=k.kernel, model=model, ncu={}, exact=exact)
        try:
            out = ncu_profile(NcuProfileInput(task_path=str(task), kernel=k.kernel, shape=shape, config=config,
                                              extra_metrics=METRICS))
            row.ncu = {m: (out.profile.metrics[m].value if m in out.profile.metrics else None) for m in METRICS}
        except Exception as e:  # noqa: BLE001 - report every task, whatever failed
            row.error = f"{type(e).__name__}: {e}"
        rows.append(row)
    return rows


def table(rows: list[Row]) -> str:
    out = [f"{'task':28} {'kernel':22} {'metric':44} {'model':>12} {'ncu':>12}"]
    for r in rows:
        for m in METRICS:
            out.append(f"{r.task:28} {r.kernel:22} {m:44} {r.model[m]:>12} {r.ncu.get(m)!s:>12}")
        if r.error:
            out.append(f"    error: {r.error}")
    return "\n".join(out)


def _all_rows() -> list[Row]:
    rows: list[Row] = []
    for task, config, exact in CASES:
        if task.exists():
            rows += compare(task, config, exact)
    if dest := os.environ.get("KPILOT_FIXTURE_OUT"):
        Path(dest, "mem_access_vs_ncu.json").write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return rows


@pytest.mark.gpu
def test_model_equals_ncu_for_plain_ldg_stg_kernels() -> None:
    rows = _all_rows()
    print("\n" + table(rows))
    bad = [f"{r.task} {r.config} {r.kernel}: model {r.model} ncu {r.ncu} {r.error}" for r in rows
           if r.exact and (r.error or not r.matches())]
    assert not bad, "\n".join(bad)


if __name__ == "__main__":
    print(table(_all_rows()))

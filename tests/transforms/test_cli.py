"""`kpilot transforms [--json]` and `kpilot transform TASK NAME [--param K=V] [--out F] [--json]`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from shared.transforms.table import TABLE

ROOT = Path(__file__).resolve().parents[2]


def kpilot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], check=False, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_transforms_lists_the_table_as_records() -> None:
    p = kpilot("transforms", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["name"] for r in rows] == [t.spec.name for t in TABLE]
    for r in rows:
        assert r["answers"] and r["precondition"] and r["summary"]
        for prm in r["params"]:
            assert prm["default"] in prm["domain"]
    text = kpilot("transforms").stdout
    assert "grouped_order  [triton]" in text and "answers: poor_l2_reuse_no_grouped_order" in text


def test_transform_writes_the_candidate_and_prints_the_diff(tmp_path: Path) -> None:
    out = tmp_path / "cand.py"
    p = kpilot("transform", "benchmarks/tasks/l2_bmm.py", "grouped_order", "--param", "group_m=4",
               "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr
    rec = json.loads(p.stdout)
    assert rec["params"] == {"group_m": 4} and rec["out"] == str(out)
    assert out.read_text() == rec["source"] and '"GROUP_M": 4' in rec["source"]
    assert rec["diff"].startswith("--- a/l2_bmm.py\n+++ b/l2_bmm.py\n")
    p = kpilot("transform", "benchmarks/tasks/l1_gelu.py", "eviction_policy", "--param", "policy=evict_last")
    assert p.returncode == 0 and '+    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_last")' \
        in p.stdout


def test_transform_exits_2_with_the_failed_precondition(tmp_path: Path) -> None:
    p = kpilot("transform", "examples/matmul.py", "grouped_order", "--out", str(tmp_path / "x.py"))
    assert p.returncode == 2
    assert "grouped_order refused: matmul_kernel already computes a grouped order" in p.stderr
    assert not (tmp_path / "x.py").exists()
    p = kpilot("transform", "examples/matmul.py", "grouped_ordr")
    assert p.returncode == 2 and "did you mean 'grouped_order'" in p.stderr
    p = kpilot("transform", "examples/matmul.py", "k_pipeline", "--param", "stages")
    assert p.returncode == 2 and "write it as KEY=VALUE" in p.stderr

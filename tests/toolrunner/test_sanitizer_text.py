"""The compute-sanitizer text parser, on real output captured on the H200.

The fixtures come from tests/toolrunner/test_gpu_tools.py run with KPILOT_FIXTURE_OUT (it saves
`sanitizer_memcheck_wild_read.txt`, memcheck on tests/fixtures/tasks/add_wild_read.py); commit them under
tests/fixtures/sanitizer/. Until then these tests skip: no sanitizer output was available on the CPU
machine this was written on, and made-up text is not a fixture.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.toolrunner.sanitizer_text import MAX_FINDINGS, MAX_LINES, parse_sanitizer_output

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sanitizer"
WILD = FIXTURES / "sanitizer_memcheck_wild_read.txt"


@pytest.mark.skipif(not WILD.exists(), reason="capture with the gpu test (KPILOT_FIXTURE_OUT) first")
def test_memcheck_wild_read() -> None:
    rep = parse_sanitizer_output(WILD.read_text(), "memcheck", 1)
    assert rep.verdict == "errors" and rep.errors is not None and rep.errors > 0
    assert 0 < len(rep.findings) <= MAX_FINDINGS
    f = rep.findings[0]
    assert "Invalid __global__ read" in f.kind and f.kernel == "add_kernel"
    assert f.location.endswith(".py:" + f.location.rsplit(":", 1)[-1])  # <file>.py:<line>
    assert len(f.lines) <= MAX_LINES and not any("Host Frame" in ln for ln in f.lines)


def test_empty_output_is_a_failed_run_not_clean() -> None:
    rep = parse_sanitizer_output("", "memcheck", None)
    assert rep.verdict == "failed" and rep.errors is None and "no compute-sanitizer output" in rep.message

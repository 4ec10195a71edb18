"""The compute-sanitizer text parser, on real output captured on the H200.

tests/fixtures/sanitizer/sanitizer_memcheck_wild_read.txt is memcheck on tests/fixtures/tasks/add_wild_read.py,
saved by tests/toolrunner/test_gpu_tools.py::test_sanitize_finds_the_wild_read with KPILOT_FIXTURE_OUT
(benchmarks/runs/legacy/device_run1.sh, H200, compute-sanitizer of CUDA 13.0).
"""

from __future__ import annotations

from pathlib import Path

from shared.parsers.sanitizer import MAX_FINDINGS, MAX_LINES, parse_sanitizer_output

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sanitizer"
WILD = FIXTURES / "sanitizer_memcheck_wild_read.txt"


def test_memcheck_wild_read() -> None:
    text = WILD.read_text()
    rep = parse_sanitizer_output(text, "memcheck", 1)
    # The file ends "ERROR SUMMARY: 4016 errors" then "ERROR SUMMARY: 3996 errors were not printed": the
    # count is the first (the parser once took the second; tests/fixtures/h200/sanitize_wild_read.json,
    # recorded then, says 3996).
    assert "ERROR SUMMARY: 4016 errors\n" in text and "3996 errors were not printed" in text
    assert rep.verdict == "errors" and rep.errors == 4016
    # memcheck printed 20 findings (its default print limit), all the same read, threads 64.. of block 8.
    assert len(rep.findings) == MAX_FINDINGS == 20
    assert {(f.kind, f.kernel, f.location) for f in rep.findings} == {
        ("Invalid __global__ read of size 4 bytes", "add_kernel", "add_wild_read.py:17")
    }
    f = rep.findings[0]
    assert f.lines[2] == "by thread (64,0,0) in block (8,0,0)"
    assert len(f.lines) <= MAX_LINES and not any("Host Frame" in ln for ln in f.lines)
    assert rep.message == "Invalid __global__ read of size 4 bytes" and rep.program_exit_code == 1
    # The program's own traceback (torch.AcceleratorError) is interleaved without the prefix: not a finding.
    assert "AcceleratorError" in text and not any("Traceback" in ln for f in rep.findings for ln in f.lines)


def test_empty_output_is_a_failed_run_not_clean() -> None:
    rep = parse_sanitizer_output("", "memcheck", None)
    assert rep.verdict == "failed" and rep.errors is None and "no compute-sanitizer output" in rep.message

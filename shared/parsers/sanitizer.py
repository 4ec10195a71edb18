"""Parse compute-sanitizer's text output into a verdict record. Pure.

Every sanitizer line starts with "========= ". A finding is a block: an unindented message ("Invalid
__global__ read of size 4 bytes", "Error: Race reported between ...", "Program hit cudaError...") then
indented detail lines ("    at add_kernel+0x1b0 in /x/task.py:12", "    by thread (0,0,0) in block ...",
host backtrace frames). The run ends with "ERROR SUMMARY: N errors" (racecheck also prints "RACECHECK
SUMMARY: H hazards displayed (E errors, W warnings)"). No summary means the sanitizer itself broke.
"""

from __future__ import annotations

import re

from shared.tools.profile import SanitizerFinding, SanitizerReport, SanitizerTool

PREFIX = "========="
# Anchored at the end: past --print-limit memcheck adds "ERROR SUMMARY: 3996 errors were not printed. Use
# --print-limit ..." after "ERROR SUMMARY: 4016 errors" (tests/fixtures/sanitizer/, H200).
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: ([\d,]+) errors?\s*$")
_RACE_SUMMARY = re.compile(
    r"RACECHECK SUMMARY: ([\d,]+) hazards? displayed \(([\d,]+) errors?, ([\d,]+) warnings?\)"
)
# "at add_kernel+0x1b0 in /x/task.py:12" (current) or "at 0xda0 in /x/task.py:175:add_kernel" (older).
_FRAME_NEW = re.compile(r"\bat (?P<fn>[^\s+]+)\+0x[0-9a-fA-F]+(?: in (?P<loc>\S+))?")
_FRAME_OLD = re.compile(r"\bat 0x[0-9a-fA-F]+ in (?P<loc>[^\s:]+:\d+):(?P<fn>\S+)")
_NOT_FINDINGS = (
    "COMPUTE-SANITIZER",
    "ERROR SUMMARY",
    "RACECHECK SUMMARY",
    "LEAK SUMMARY",
    "Target application returned an error",
)
# Lines of a finding kept in the record: enough for the message, location and thread, not the host stack.
MAX_LINES = 8
MAX_FINDINGS = 20


def _int(s: str) -> int:
    return int(s.replace(",", ""))


def _finding(lines: list[str]) -> SanitizerFinding:
    kernel = location = ""
    for ln in lines[1:]:
        m = _FRAME_NEW.search(ln) or _FRAME_OLD.search(ln)
        if m and ("Host Frame" not in ln):
            kernel, location = m.group("fn"), m.group("loc") or ""
            break
    if not kernel:  # racecheck puts the frame on the message line itself
        m = _FRAME_NEW.search(lines[0]) or _FRAME_OLD.search(lines[0])
        if m:
            kernel, location = m.group("fn"), m.group("loc") or ""
    kept = [ln for ln in lines if "Host Frame" not in ln and not ln.strip().startswith("in /")]
    return SanitizerFinding(kind=lines[0].strip(), kernel=kernel, location=location, lines=kept[:MAX_LINES])


def parse_sanitizer_output(text: str, tool: SanitizerTool, exit_code: int | None = None) -> SanitizerReport:
    blocks: list[list[str]] = []
    errors = warnings = None
    saw_banner = False
    current: list[str] | None = None
    for raw in text.splitlines():
        if not raw.startswith(PREFIX):
            continue  # the program's own output, interleaved
        body = raw[len(PREFIX) :]
        text_ = body.strip()
        if not text_:
            current = None
            continue
        if text_.startswith("COMPUTE-SANITIZER"):
            saw_banner = True
        if m := _ERROR_SUMMARY.search(text_):
            errors, current = _int(m.group(1)), None
            continue
        if m := _RACE_SUMMARY.search(text_):
            warnings, current = _int(m.group(3)), None
            errors = _int(m.group(2)) if errors is None else errors
            continue
        if any(text_.startswith(s) for s in _NOT_FINDINGS):
            current = None
            continue
        indented = body.startswith(("    ", "\t"))
        if indented and current is not None:
            current.append(text_)
        elif not indented:
            current = [text_]
            blocks.append(current)
    findings = [_finding(b) for b in blocks[:MAX_FINDINGS]]
    if errors is None:
        why = (
            findings[0].kind
            if findings
            else ("no ERROR SUMMARY in the output" if saw_banner else "no compute-sanitizer output")
        )
        return SanitizerReport(
            tool=tool,
            verdict="failed",
            errors=None,
            warnings=warnings,
            findings=findings,
            program_exit_code=exit_code,
            message=why,
        )
    verdict = "errors" if errors > 0 else "clean"
    msg = "" if verdict == "clean" or not findings else findings[0].kind
    return SanitizerReport(
        tool=tool,
        verdict=verdict,
        errors=errors,
        warnings=warnings,
        findings=findings,
        program_exit_code=exit_code,
        message=msg,
    )

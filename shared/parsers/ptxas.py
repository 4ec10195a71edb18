"""Parse `ptxas -v` output (resource usage per function) into a PtxasReport. Pure; tested on real
captures in tests/fixtures/ptxas/ (made by tests/fixtures/capture_ptxas.py). The one reader of this text:
the toolrunner's ptxas_info tool returns the report, the decomposer reads one kernel of it (`kernel_info`).

The lines it reads (ptxas 12.8 and 13.0):
    ptxas info    : 0 bytes gmem
    ptxas info    : Compiling entry function 'matmul_kernel' for 'sm_90a'
    ptxas info    : Function properties for matmul_kernel
        592 bytes stack frame, 1284 bytes spill stores, 1028 bytes spill loads
    ptxas info    : Used 96 registers, used 1 barriers, 592 bytes cumulative stack size
    ptxas info    : Used 30 registers, used 1 barriers, 4224 bytes smem, 380 bytes cmem[0]
"""

from __future__ import annotations

import re

import msgspec

from shared.tools.decompose import PtxasInfo
from shared.tools.inspect import ConstantBank, KernelResources, PtxasReport

_PREFIX = re.compile(r"^ptxas\s+(info|warning|error|fatal)\s*:\s*(.*)$")
_ENTRY = re.compile(r"^Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"^Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"^Used (\d+) registers(.*)$")
_BYTES = re.compile(r"(\d+) bytes (smem|gmem|cmem\[(\d+)\]|cumulative stack size)")
_BARRIERS = re.compile(r"used (\d+) barriers")
_ADVISORY = re.compile(r"^\(C\d+\)")  # numbered notes such as "(C7511) Potential Performance Loss: ..."


def parse_ptxas_v(text: str) -> PtxasReport:
    functions: dict[str, KernelResources] = {}
    entry: str | None = None  # the entry function the "Used ..." line belongs to
    props: str | None = None  # the function the next "stack frame" line belongs to
    global_bytes = 0
    messages: list[str] = []

    def fn(name: str, is_entry: bool = False) -> KernelResources:
        if name not in functions:
            functions[name] = KernelResources(name=name, is_entry=is_entry)
        elif is_entry:
            functions[name].is_entry = True
        return functions[name]

    for raw in text.splitlines():
        line = raw.strip()
        if (m := _FRAME.search(line)) and props is not None and not _PREFIX.match(line):
            f = fn(props)
            f.stack_frame_bytes, f.spill_stores_bytes, f.spill_loads_bytes = (int(g) for g in m.groups())
            continue
        m = _PREFIX.match(line)
        if m is None:
            continue
        level, body = m.groups()
        if level != "info" or _ADVISORY.match(body):
            messages.append(f"{level}: {body}")
            continue
        if m := _ENTRY.match(body):
            entry = m.group(1)
            fn(entry, is_entry=True).arch = m.group(2)
        elif m := _PROPS.match(body):
            props = m.group(1)
            fn(props)
        elif (m := _USED.match(body)) and entry is not None:
            f = fn(entry, is_entry=True)
            f.registers = int(m.group(1))
            rest = m.group(2)
            if b := _BARRIERS.search(rest):
                f.barriers = int(b.group(1))
            for size, what, bank in _BYTES.findall(rest):
                if what == "smem":
                    f.shared_bytes = int(size)
                elif what == "cumulative stack size":
                    f.cumulative_stack_bytes = int(size)
                elif bank:
                    f.constant = [*f.constant, ConstantBank(bank=int(bank), bytes=int(size))]
        elif body.endswith("bytes gmem") or "bytes gmem," in body:
            for size, what, _bank in _BYTES.findall(body):
                if what == "gmem":
                    global_bytes += int(size)
    return PtxasReport(functions=list(functions.values()), global_bytes=global_bytes, messages=messages)


_RES_FUNC = re.compile(r"^\s*Function ([^:\s]+):\s*$")
_RES_CONST = re.compile(r"CONSTANT\[(\d+)\]:(\d+)")


def parse_res_usage(text: str) -> tuple[list[ConstantBank], dict[str, list[ConstantBank]]]:
    """Constant banks from `cuobjdump -res-usage`: (module "Common" banks, per-function banks).

    Resource usage:
     Common:
      GLOBAL:4 CONSTANT[3]:256 CONSTANT[4]:8
     Function transpose_tiled:
      REG:24 STACK:0 SHARED:5248 LOCAL:0 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0
    """
    common: list[ConstantBank] = []
    per_fn: dict[str, list[ConstantBank]] = {}
    section: str | None = None
    for line in text.splitlines():
        if line.strip() == "Common:":
            section = ""
        elif m := _RES_FUNC.match(line):
            section = m.group(1)
        elif section is not None and (banks := _RES_CONST.findall(line)):
            parsed = [ConstantBank(bank=int(b), bytes=int(n)) for b, n in banks]
            if section == "":
                common.extend(parsed)
            else:
                per_fn.setdefault(section, []).extend(parsed)
    return common, per_fn


def with_res_usage(report: PtxasReport, res_usage: str) -> PtxasReport:
    """`report` with the constant banks cuobjdump found (ptxas's own cmem figures win where present)."""
    common, per_fn = parse_res_usage(res_usage)
    functions = [
        msgspec.structs.replace(f, constant=per_fn[f.name]) if f.name in per_fn and not f.constant else f
        for f in report.functions
    ]
    return msgspec.structs.replace(report, functions=functions, module_constant=common)


def kernel_info(text: str, kernel: str = "") -> PtxasInfo | None:
    """One entry function of `ptxas -v` text as the decomposer records it: `kernel`, or the last entry
    when none is named. None when no such entry has a `Used N registers` line."""
    entries = [f for f in parse_ptxas_v(text).functions
               if f.registers is not None and (not kernel or f.name == kernel)]
    if not entries:
        return None
    f = entries[-1]
    return PtxasInfo(registers=f.registers, spill_stores=f.spill_stores_bytes, spill_loads=f.spill_loads_bytes,
                     stack_frame=f.stack_frame_bytes, barriers=f.barriers or 0, smem_bytes=f.shared_bytes,
                     cmem_bytes=sum(b.bytes for b in f.constant))

"""SASS (nvdisasm --print-line-info) and ptxas -v parsing on captured fixtures."""

from __future__ import annotations

from pathlib import Path

from services.decomposer.sass import access_bits, parse_ptxas, parse_sass, per_line, ptx_vector_loads
from shared.parsers.ptx import ptx_access_bytes
from shared.parsers.ptxas import parse_ptxas_v
from shared.parsers.sass import kernels_from_text
from tests.decomposer import decomposer_corpus as corpus

PTXAS_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ptxas"


def test_ptxas_registers_and_spills() -> None:
    art, _, _ = corpus.load("matmul_spills")
    info = parse_ptxas(art.ptxas_info, "matmul_kernel")
    assert info is not None and info.registers == 255
    assert info.spill_stores > 0 and info.spill_loads > 0
    clean = parse_ptxas(corpus.load("clean_add")[0].ptxas_info)
    assert clean is not None and clean.spill_stores == 0 and clean.registers and clean.registers < 64
    assert parse_ptxas("nothing here") is None


def test_the_decomposer_reads_ptxas_as_the_ptxas_info_tool_does() -> None:
    # One parser (shared/parsers/ptxas.py): each kernel's figures are the tool's report of the same text.
    texts = [p for p in sorted(PTXAS_FIXTURES.glob("*.txt")) if "res-usage" not in p.name]
    assert len(texts) >= 6
    for path in texts:
        text = path.read_text()
        entries = [f for f in parse_ptxas_v(text).functions if f.registers is not None]
        assert entries, path.name
        for f in entries:
            info = parse_ptxas(text, f.name)
            assert info is not None, (path.name, f.name)
            assert (info.registers, info.spill_stores, info.spill_loads, info.stack_frame, info.smem_bytes) == (
                f.registers, f.spill_stores_bytes, f.spill_loads_bytes, f.stack_frame_bytes, f.shared_bytes)
            assert info.cmem_bytes == sum(b.bytes for b in f.constant) and info.barriers == (f.barriers or 0)
        assert parse_ptxas(text) == parse_ptxas(text, entries[-1].name)  # no name: the last entry


def test_sass_line_correlation_vector_widths() -> None:
    art, _, _ = corpus.load("clean_add")
    s = parse_sass(art.sass, "add_kernel")
    assert s.has_line_info and s.kernels == ["add_kernel"]
    rows = per_line(s)
    ldg = [b for r in rows for b in r.ldg_bits]
    assert ldg and set(ldg) == {128}  # 4 x fp32 per thread: LDG.E.128
    assert all(r.file == "tests/decomposer/corpus/cases.py" for r in rows if r.ldg_bits)


def test_sass_scalar_loads_when_mask_bound_not_divisible() -> None:
    rows = per_line(parse_sass(corpus.load("mask_nodiv_add")[0].sass))
    assert {b for r in rows for b in r.ldg_bits} == {32}


def test_sass_tensor_instructions_and_spill_traffic() -> None:
    rows = per_line(parse_sass(corpus.load("clean_matmul_bf16")[0].sass))
    assert any(i.startswith("HGMMA") for r in rows for i in r.tensor_instrs)
    rows = per_line(parse_sass(corpus.load("matmul_spills")[0].sass))
    assert sum(r.local_accesses for r in rows) > 0


def test_access_bits_and_ptx_widths() -> None:
    assert [access_bits(x) for x in ("LDG.E.128", "LDG.E", "LDG.E.U16", "STG.E.64")] == [128, 32, 16, 64]
    widths = ptx_vector_loads(corpus.load("clean_add")[0].ptx)
    assert widths and max(widths) == 128


def test_the_decomposer_reads_sass_as_the_sass_tool_does() -> None:
    # One parser (shared/parsers/sass.py): the same instructions, in the same order, with the full opcode
    # (the decomposer's old reader cut "HGMMA.64x128x16.F32.BF16" at the first lowercase letter).
    art, _, _ = corpus.load("matmul_one_stage")
    (tool,) = kernels_from_text(art.sass)
    mine = parse_sass(art.sass, tool.name)
    assert mine.kernels == [tool.name] and mine.has_line_info
    assert [(int(i.addr, 16), i.opcode, i.file, i.line) for i in mine.instrs] == [
        (t.addr, t.opcode, t.file, t.line) for t in tool.instructions]
    tensor = {op for r in per_line(mine) for op in r.tensor_instrs}
    assert "HGMMA.64x128x16.F32.BF16" in tensor and "HGMMA.64" not in tensor


def test_the_decomposer_and_mem_access_read_ptx_load_widths_alike() -> None:
    # One PTX width reader (shared/parsers/ptx.py): every load width the decomposer counts is a width
    # the mem_access tool attributes to some source location of the same PTX.
    cases = [d for d in sorted(corpus.CORPUS.iterdir()) if (d / "kernel.ptx").is_file()]
    assert len(cases) > 50
    seen = 0
    for d in cases:
        ptx = (d / "kernel.ptx").read_text()
        loads = ptx_vector_loads(ptx)
        assert sum(loads.values()) == ptx.count("ld.global."), d.name
        if loads and ".loc" in ptx:
            seen += 1
            assert set(loads) <= {8 * b for b in ptx_access_bytes(ptx).values()}, d.name
    assert seen > 50

"""SASS parser and sass tool on real cubins (tests/fixtures/capture_sass.py says how they were made)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import msgspec
import pytest

from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.sass.cubin_elf import CubinError, kernel_names
from services.toolrunner.tools.sass.spec import SPEC
from shared.parsers.sass import arch_of, kernels_from_text, parse_sass, split_operands
from shared.tools.inspect import SassInput, SassOutput

SASS = Path(__file__).resolve().parents[1] / "fixtures" / "sass"


def _kernel(stem: str, tool: str = "nvdisasm"):
    (k,) = kernels_from_text((SASS / f"{stem}.{tool}.sass").read_text())
    return k


@pytest.mark.parametrize("tool", ["nvdisasm", "cuobjdump"])
def test_vector_add_uses_128_bit_global_accesses(tool: str) -> None:
    k = _kernel("add_kernel", tool)
    assert k.name == "add_kernel"
    # BLOCK 1024 over 4 warps = 8 fp32 per thread per tensor: two LDG.E.128 per input, two STG.E.128 out.
    assert k.summary.global_loads == {"128": 4}
    assert k.summary.global_stores == {"128": 2}
    assert k.histogram["LDG.E.128"] == 4 and k.histogram["STG.E.128"] == 2
    assert k.summary.hgmma == k.summary.local_loads == k.summary.barriers == 0


def test_instruction_fields_of_a_predicated_load() -> None:
    k = _kernel("add_kernel")
    ldg = [i for i in k.instructions if i.opcode == "LDG.E.128"]
    assert ldg[0].predicate == "@!P0"
    assert ldg[0].operands == ["R16", "desc[UR4][R2.64]"]
    assert ldg[2].operands[1] == "desc[UR4][R2.64+0x800]"
    assert ldg[0].addr == 0x180
    assert ldg[0].file is not None and ldg[0].file.endswith("capture_sass.py")
    # line info points into add_kernel's body in capture_sass.py, not elsewhere in the file
    src = (SASS.parent / "capture_sass.py").read_text().splitlines()
    first = next(i for i, ln in enumerate(src, 1) if ln.startswith("def add_kernel"))
    last = next(i for i, ln in enumerate(src[first:], first + 1) if not ln.strip()) - 1
    assert {i.line for i in ldg} <= set(range(first, last + 1))
    assert {i.line for i in k.instructions if i.opcode.startswith("STG")} == {last}  # the tl.store line


def test_both_disassemblers_agree_on_every_kernel() -> None:
    for stem in ("add_kernel", "matmul_kernel", "softmax_kernel", "histogram_kernel", "softmax_spill"):
        a, b = _kernel(stem, "nvdisasm"), _kernel(stem, "cuobjdump")
        assert a.histogram == b.histogram, stem
        assert [i.addr for i in a.instructions] == [i.addr for i in b.instructions]
        assert a.has_line_info and not b.has_line_info


def test_matmul_uses_hgmma_barriers_and_async_copies() -> None:
    k = _kernel("matmul_kernel")
    assert k.summary.hgmma == 4  # BK 64 / K 16 per wgmma
    assert all(op.startswith("HGMMA.64x128x16.F32") for op in k.histogram if op.startswith("HGMMA"))
    assert k.summary.barriers >= 1 and k.summary.async_copies == {"128": 24}
    assert k.summary.shared_loads > 0 and k.summary.local_loads == 0


def test_spilling_kernel_shows_local_memory_traffic() -> None:
    k = _kernel("softmax_spill")
    assert k.summary.local_loads > 0 and k.summary.local_stores > 0
    assert _kernel("softmax_kernel").summary.local_loads == 0


def test_atomics_and_shuffles() -> None:
    assert _kernel("histogram_kernel").summary.global_atomics == 8
    assert _kernel("softmax_kernel").summary.shuffles > 0


def test_arch_from_either_format() -> None:
    assert arch_of((SASS / "add_kernel.cuobjdump.sass").read_text()) == "sm_90a"
    assert arch_of((SASS / "add_kernel.nvdisasm.sass").read_text()) == "sm_90a"


def test_operand_split_keeps_brackets_and_labels_whole() -> None:
    assert split_operands(" R24, gdesc[UR8].tnspB, R24, gsb0 ") == ["R24", "gdesc[UR8].tnspB", "R24", "gsb0"]
    assert split_operands("`(.L_x_0) ") == ["`(.L_x_0)"]
    assert split_operands("") == []


def test_text_without_kernels_gives_none() -> None:
    assert parse_sass("") == {}


def test_cubin_kernel_names() -> None:
    assert kernel_names((SASS / "add_kernel.cubin").read_bytes()) == ["add_kernel"]
    assert sorted(kernel_names((SASS / "two_kernels.cubin").read_bytes())) == ["scale", "shift"]
    with pytest.raises(CubinError, match="not an ELF"):
        kernel_names((SASS / "add_kernel.nvdisasm.sass").read_bytes())


def test_check_refuses_unknown_kernel_listing_the_known_ones() -> None:
    with pytest.raises(ToolFailure) as e:
        SPEC.check(SassInput(cubin_path=str(SASS / "two_kernels.cubin"), kernel="add"))  # type: ignore[misc]
    assert e.value.code == "refused"
    assert "scale" in e.value.message and "shift" in e.value.message
    with pytest.raises(ToolFailure, match="no such cubin"):
        SPEC.check(SassInput(cubin_path=str(SASS / "missing.cubin")))  # type: ignore[misc]


def test_tool_run_disassembles_and_matches_the_schema() -> None:
    out = SPEC.run(SassInput(cubin_path=str(SASS / "two_kernels.cubin"), kernel="scale"))
    assert isinstance(out, SassOutput)
    assert [k.name for k in out.kernels] == ["scale"]
    assert out.arch.startswith("sm_90") and out.disassembler.startswith("nvdisasm")
    assert out.kernels[0].summary.global_loads and out.kernels[0].summary.global_stores
    schema = msgspec.json.schema(SassOutput)
    jsonschema.validate(msgspec.to_builtins(out), schema)


def test_tool_run_summary_only() -> None:
    out = SPEC.run(
        SassInput(
            cubin_path=str(SASS / "matmul_kernel.cubin"), include_instructions=False, disassembler="cuobjdump"
        )
    )
    (k,) = out.kernels
    assert k.instructions == [] and k.summary.hgmma == 4


def test_include_text_returns_the_nvdisasm_text_with_line_info() -> None:
    cubin = str(SASS / "add_kernel.cubin")
    assert SPEC.run(SassInput(cubin_path=cubin)).text == ""  # off by default: the record stays small
    out = SPEC.run(SassInput(cubin_path=cubin, include_text=True, include_instructions=False))
    # The same text the parsed record came from (nvdisasm -c -gi), as the fixture captured it.
    assert kernels_from_text(out.text, include_instructions=False) == out.kernels
    assert '//## File "' in out.text and ".text.add_kernel:" in out.text
    assert out.text.count("LDG.E.128") == 4


def test_task_mode_compiles_with_the_compile_tool_then_disassembles() -> None:
    task = str(SASS.parents[2] / "examples" / "vector_add.py")
    out = SPEC.run(SassInput(task_path=task, config={"BLOCK": 1024}, include_instructions=False))
    (k,) = out.kernels
    # The full shape's aligned pointers let Triton vectorize: 128-bit loads and stores.
    assert k.name == "add_kernel" and k.summary.global_loads == {"128": 4}
    assert out.compile_cache_key and len(out.cubin_sha256) == 64 and out.arch == "sm_90a"


def test_exactly_one_source_of_cubin() -> None:
    for req in (SassInput(), SassInput(cubin_path=str(SASS / "add_kernel.cubin"), task_path="x.py")):
        with pytest.raises(ToolFailure, match="exactly one"):
            SPEC.check(req)  # type: ignore[misc]

"""Parsing memory ops out of real TTGIR/PTX (tests/fixtures/ttgir, captured by capture_ttgir.py)."""

from __future__ import annotations

from pathlib import Path

from shared.parsers.ptx import ptx_access_bytes
from shared.parsers.ttgir_memops import BlockedLayout, memory_ops

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ttgir"


def _read(name: str) -> tuple[str, str]:
    return (FIX / f"{name}.ttgir").read_text(), (FIX / f"{name}.ptx").read_text()


def _by_name(widths: dict[tuple[str, int, int], int]) -> dict[tuple[str, int, int], int]:
    return {(Path(f).name, line, col): b for (f, line, col), b in widths.items()}


def test_transpose_load_and_store_share_the_row_major_layout_and_vectorise_to_16_bytes() -> None:
    ttgir, ptx = _read("probe_transpose")
    ir = memory_ops(ttgir)
    assert ir.name == "transpose_naive"
    assert ir.num_warps == 4
    load, store = ir.ops
    row_major = BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0))
    assert (load.kind, Path(load.file).name, load.line, load.shape, load.elem_type, load.elem_bytes) == (
        "load", "probe_transpose.py", 20, (32, 32), "f32", 4)
    assert load.layout == row_major
    # The store's pointer is contiguous along its own dim 1, so Triton gives it the same row-major layout
    # and converts the data through shared memory (the #blocked1 layout is the transposed register tile).
    assert (store.kind, store.line, store.layout) == ("store", 21, row_major)
    assert "#blocked1" in ir.layouts
    # ld.global.v4.b32 / st.global.v4.b32: 16 bytes per lane, at the ops' own line:col
    assert _by_name(ptx_access_bytes(ptx)) == {("probe_transpose.py", 20, load.col): 16,
                                               ("probe_transpose.py", 21, store.col): 16}


def test_unaligned_length_keeps_size_per_thread_4_but_ptx_moves_one_float_per_instruction() -> None:
    ttgir, ptx = _read("vector_add_block1024_n4099")
    ir = memory_ops(ttgir)
    assert [(o.kind, o.line) for o in ir.ops] == [("load", 13), ("load", 14), ("store", 15)]
    assert all(o.layout == BlockedLayout((4,), (32,), (4,), (0,)) for o in ir.ops)
    widths = _by_name(ptx_access_bytes(ptx))
    assert sorted(widths.values()) == [4, 4, 4]  # ld.global.b32 x 4 per op, not ld.global.v4.b32


def test_strided_gather_has_one_element_per_thread() -> None:
    ttgir, ptx = _read("mem_strided")
    ir = memory_ops(ttgir)
    assert [(o.kind, o.line, o.shape) for o in ir.ops] == [("load", 13, (128,)), ("store", 14, (128,))]
    assert ir.ops[0].layout == BlockedLayout((1,), (32,), (4,), (0,))
    assert set(ptx_access_bytes(ptx).values()) == {4}


def test_inline_slice_and_named_locations_resolve() -> None:
    text = '#blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>\n#loc = loc("/k.py":9:0)\nmodule attributes {"ttg.num-warps" = 4 : i32} {\n  tt.func public @k(%b: !tt.ptr<f32>) {\n    %b_1 = tt.load %b_0 : tensor<32x!tt.ptr<f32>, #ttg.slice<{dim = 0, parent = #blocked}>> loc(#loc7)\n    %s = tt.load %b : !tt.ptr<f32> loc(#loc9)\n  } loc(#loc)\n} loc(#loc)\n#loc3 = loc("/k.py":13:16)\n#loc4 = loc("/k.py":40:2)\n#loc7 = loc("b"(#loc3))\n#loc8 = loc(callsite(#loc4 at #loc3))\n#loc9 = loc("s"(#loc8))'
    ir = memory_ops(text)
    sliced, scalar = ir.ops
    assert (sliced.file, sliced.line, sliced.col, sliced.shape) == ("/k.py", 13, 16, (32,))
    assert sliced.layout == BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0), sliced_dim=0)
    # an inlined helper's op is attributed to the helper's own line (the callee of the call site)
    assert (scalar.line, scalar.shape, scalar.layout) == (40, (), None)


def test_a_noinline_helpers_loads_are_read_too() -> None:
    # the old line scan saw every tt.load of the text; memory_ops reads every function with a body
    text = ('#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>\n'
            '#loc = loc("/k.py":3:0)\n#loc1 = loc("/k.py":9:0)\n'
            'module attributes {"ttg.num-warps" = 4 : i32} {\n'
            '  tt.func public @k(%p: !tt.ptr<f32> loc("/k.py":3:0)) attributes {noinline = false} {\n'
            '    %v = tt.call @h(%p) : (!tt.ptr<f32>) -> f32 loc(#loc)\n'
            '    tt.store %p, %v : !tt.ptr<f32> loc("/k.py":5:4)\n'
            '    tt.return loc(#loc)\n  } loc(#loc)\n'
            '  tt.func private @h(%q: !tt.ptr<f32> loc("/k.py":9:0)) -> f32 attributes {noinline = true} {\n'
            '    %x = tt.load %q : !tt.ptr<f32> loc("/k.py":10:8)\n'
            '    tt.return %x : f32 loc(#loc1)\n  } loc(#loc1)\n'
            '  tt.func private @ext(f32) -> f32\n'
            '} loc(#loc)\n')
    ir = memory_ops(text)
    assert (ir.name, ir.num_warps) == ("k", 4)
    assert [(o.kind, o.line, o.col, o.shape, o.elem_type) for o in ir.ops] == [
        ("store", 5, 4, (), "f32"), ("load", 10, 8, (), "f32")]

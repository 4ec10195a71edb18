"""TTGIR parsing on captured fixtures (tests/decomposer/corpus, see capture_corpus.py)."""

from __future__ import annotations

import pytest

from shared.parsers.ttgir import TtgirError, decode_layouts, parse_ttgir, resolve_layout, value_type
from tests.decomposer import decomposer_corpus as corpus

SRC = "tests/decomposer/corpus/cases.py"


def _mod(case: str):
    art, _, _ = corpus.load(case)
    return parse_ttgir(art.ttgir)


def test_module_header_args_and_divisibility() -> None:
    m = _mod("scalar_rows_nodiv")
    assert (m.func, m.num_warps, m.target, m.file) == ("copy_rows_kernel", 8, "cuda:90", SRC)
    div = {a.name: a.divisibility for a in m.args}
    assert div["%x_ptr"] == 16 and div["%stride_x"] is None  # 4100 % 16 != 0: JIT gives no hint


def test_locations_resolve_aliases_to_source_lines() -> None:
    m = _mod("clean_add")
    src = (corpus.CORPUS / "cases.py").read_text().splitlines()
    loads = [op for op in m.ops if op.name == "tt.load"]
    assert loads and all(op.loc is not None and op.loc.file == SRC for op in loads)
    for op in loads:
        assert "tl.load" in src[op.loc.line - 1]
    store = next(op for op in m.ops if op.name == "tt.store")
    assert "tl.store" in src[store.loc.line - 1]


def test_loops_iter_args_and_nesting() -> None:
    m = _mod("clean_matmul_bf16")
    loops = [op for op in m.ops if op.name == "scf.for"]
    assert len(loops) == 1
    dot = next(op for op in m.ops if op.name == "ttng.warp_group_dot")
    assert dot.loops == (loops[0].id,)
    assert dot.result_type is not None and dot.result_type.shape == (128, 128)
    assert m.iter_init, "scf.for iter_args map to their init values"
    for arg, init in m.iter_init.items():
        assert value_type(m, arg) is not None or value_type(m, init) is None


def test_layouts_decode() -> None:
    m = _mod("clean_matmul_bf16")
    table = decode_layouts(m.layouts)
    mma = [x for x in table.values() if x.kind == "nvidia_mma"]
    assert mma and mma[0].mma_version == 3 and mma[0].instr_shape[:2] == [16, 128]
    sh = [x for x in table.values() if x.kind == "nvmma_shared"]
    assert sh and sh[0].swizzle_bytes == 128
    blocked = [x for x in table.values() if x.kind == "blocked"]
    assert blocked and all(x.size_per_thread and x.order for x in blocked)


def test_generic_region_op_gets_type_and_loc() -> None:
    m = _mod("clean_softmax")
    reds = [op for op in m.ops if op.name == "tt.reduce"]
    assert len(reds) == 2
    assert all(
        op.loc is not None and op.result_type is not None and op.result_type.elem == "f32" for op in reds
    )
    # ops inside the combiner region are parented to the reduce
    assert any(op.parent == reds[0].id for op in m.ops)


def test_not_ttgir_is_refused_with_a_fix() -> None:
    with pytest.raises(TtgirError, match="pass the `ttgir` artifact"):
        parse_ttgir("def kernel(x): pass")
    art, _, _ = corpus.load("clean_add")
    with pytest.raises(TtgirError, match="add_kernel"):
        parse_ttgir(art.ttgir, kernel="nope")


def test_every_fixture_load_points_at_a_load_in_cases_py() -> None:
    # fixtures and cases.py must stay in step: re-run capture_corpus.py after editing cases.py
    src = (corpus.CORPUS / "cases.py").read_text().splitlines()
    for d in corpus.case_dirs() + corpus.case_dirs(bench=True):
        if not (d / "kernel.ttgir").is_file():
            continue  # a CUDA C++ case (capture_cuda_corpus.py): see test_native_ptx.py
        m = parse_ttgir(corpus.load(d)[0].ttgir)
        for op in m.ops:
            if op.name == "tt.load" and op.loc is not None and op.loc.file == SRC:
                assert "load(" in src[op.loc.line - 1], (d.name, op.loc.line)


def test_an_scf_while_after_region_is_read_and_the_function_goes_on() -> None:
    # `} do {` opens the loop's second region; the parser once took it for the function's end (issue 19)
    m = _mod("oss_tutorial_layernorm_dw_lock")
    loop = next(op for op in m.ops if op.name == "scf.while")
    cond = next(op for op in m.ops if op.name == "scf.condition")
    assert cond.parent == loop.id and loop.loc is not None
    after = [op.name for op in m.ops if op.id > loop.id and op.parent is None]
    assert after == ["tt.load", "arith.addf", "tt.store", "tt.atomic_rmw", "tt.return"]
    assert m.file == "tests/decomposer/corpus/cases_more.py"  # the kernel's own file, from the func's loc


def test_an_inline_slice_layout_keeps_its_parameters() -> None:
    m = _mod("matmul_one_stage")
    table = decode_layouts(m.layouts)
    op = next(op for op in m.ops if op.source.startswith("%b_31 = tt.expand_dims"))
    (t,) = op.operand_types
    assert t.layout == "#ttg.slice<{dim = 0, parent = #blocked1}>"
    base, dim = resolve_layout(t.layout, table)
    assert base is table["#blocked1"] and dim == 0
    assert op.result_type is not None and op.result_type.layout == "#blocked1"

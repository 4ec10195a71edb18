"""Attention transformations on the straightforward FlashAttention-style tasks (benchmarks/tasks/
l3_attention_*: every key tile masked; l4_jagged_attention: the tile written inline;
l4_block_sparse_attention: every key block visited): split_key_loop, causal_tile_skip and
sparse_block_skip. The candidates pass the interpreter on micro and edge shapes (sequence lengths 100,
77 and 1 leave a ragged last tile) in fp16 and fp32 and compile for cuda:90. Applied to the stripped
tasks they are the hand-written variants the tasks used to carry behind a 0/1 switch (AST-equal with the
switch folded in): SPLIT_MASK = 1 (tests/transforms/tasks/attention_split_mask_variant.py) and SKIP = 1
(tests/transforms/tasks/block_sparse_skip_variant.py)."""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path

import pytest

from shared.transforms.base import Applied, Refused
from shared.transforms.table import answering, apply
from tests.transforms.harness import ROOT, build, correct, make_compiler

L3 = [f"benchmarks/tasks/l3_attention_{v}.py" for v in ("d64", "d64_causal", "d128", "d128_causal")]
CAUSAL = "benchmarks/tasks/l3_attention_d64_causal.py"
JAGGED = "benchmarks/tasks/l4_jagged_attention.py"
VARIANT = ROOT / "tests/transforms/tasks/attention_split_mask_variant.py"
# BLOCK_M 32 over BLOCK_N 16: a causal block has two unmasked tiles left of its diagonal
SMALL = {"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 1}
ALL_KEYS = "tests/transforms/tasks/attention_causal_all_keys.py"  # the causal task with hi = seq_len
CAUSAL_STOP = "    hi = tl.minimum(seq_len, (pid_m + 1) * BLOCK_M) if IS_CAUSAL else seq_len"


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


def _applied(source: str, name: str) -> Applied:
    got = apply(source, name)
    assert isinstance(got, Applied), got
    return got


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def _fp32(source: str) -> str:
    """The task's fp32 twin: fp32 inputs on the interpreter (no fp16 rounding of P before P @ V)."""
    out = source.replace('DTYPE = "bfloat16"', 'DTYPE = "float32"').replace('CPU_DTYPE = "float16"', "")
    out = re.sub(r"TOLERANCE = \{[^\n]*\}", 'TOLERANCE = {"float32": [1e-4, 1e-4]}', out)
    assert 'DTYPE = "float32"' in out and '"float32": [1e-4' in out
    return out


def _functions(source: str) -> dict[str, str]:
    """The module's functions as AST dumps without docstrings (the structure, not the layout)."""
    out = {}
    for n in ast.parse(source).body:
        if isinstance(n, ast.FunctionDef):
            if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant):
                n.body = n.body[1:]
            out[n.name] = ast.dump(n)
    return out


def _variant_at_split_mask_1() -> str:
    """The hand-written variant with SPLIT_MASK = 1 folded in: `lo = 0; if SPLIT_MASK: <split>` becomes
    <split>, the SPLIT_MASK parameter, CONFIG/SPACE entries and launch keyword gone."""
    tree = ast.parse(VARIANT.read_text())
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef):
            n.args.args = [a for a in n.args.args if a.arg != "SPLIT_MASK"]
            body: list[ast.stmt] = []
            for s in n.body:
                if isinstance(s, ast.If) and isinstance(s.test, ast.Name) and s.test.id == "SPLIT_MASK":
                    assert isinstance(body[-1], ast.Assign) and ast.unparse(body[-1]) == "lo = 0"
                    body = body[:-1] + s.body
                else:
                    body.append(s)
            n.body = body
        if isinstance(n, ast.Call):
            n.keywords = [k for k in n.keywords if k.arg != "SPLIT_MASK"]
        if isinstance(n, ast.Dict):
            keep = [i for i, k in enumerate(n.keys)
                    if not (isinstance(k, ast.Constant) and k.value == "SPLIT_MASK")]
            n.keys, n.values = [n.keys[i] for i in keep], [n.values[i] for i in keep]
    return ast.unparse(tree)


@pytest.mark.parametrize("task", L3)
def test_split_key_loop_on_the_stripped_task_is_the_split_mask_variant(task: str) -> None:
    src = (ROOT / task).read_text()
    assert "SPLIT_MASK" not in src and "MASKED" not in src  # the task holds its straightforward kernel only
    got = _applied(src, "split_key_loop")
    want = _functions(_variant_at_split_mask_1())
    have = _functions(got.source)
    for fn in ("attn_tile", "attn_fwd_kernel", "launch"):
        assert have[fn] == want[fn], fn
    assert "# kpilot transform split_key_loop" in got.source
    assert "# Causal: keys past this block's last query row are never needed" in got.source  # comments kept
    above = src.replace("    for start_n in range(0, hi, BLOCK_N):\n",
                        "    # the key loop\n    for start_n in range(0, hi, BLOCK_N):\n", 1)
    assert "    # the key loop\n    # kpilot transform split_key_loop" in _applied(above, "split_key_loop").source
    again = apply(got.source, "split_key_loop")
    assert isinstance(again, Refused) and "looks split already" in again.reason


@pytest.mark.parametrize("task", [L3[0], CAUSAL])
def test_split_key_loop_is_correct_fp16_and_fp32(tmp_path: Path, task: str) -> None:
    src = (ROOT / task).read_text()
    cand = _write(tmp_path, "cand.py", _applied(src, "split_key_loop").source)
    for config in ({}, SMALL):  # 32 x 32 tiles, and two unmasked tiles left of each causal diagonal
        out = correct(task, cand, config)  # micro s 64; edge s 100, 1, 77: a ragged last key tile
        assert out.passed, (config, out.summary)
    base32 = _write(tmp_path, "task32.py", _fp32(src))
    cand32 = _write(tmp_path, "cand32.py", _applied(base32.read_text(), "split_key_loop").source)
    out = correct(base32, cand32, SMALL)
    assert out.passed, out.summary


def test_split_key_loop_compiles_for_sm90_with_the_full_tiles_unpredicated(tmp_path: Path, compiler) -> None:
    cand = _write(tmp_path, "cand.py", _applied((ROOT / CAUSAL).read_text(), "split_key_loop").source)
    base, built = build(compiler, CAUSAL), build(compiler, cand)
    assert built.ptx and "mma" in built.ptx
    # two key loops where the task has one; the first (the full tiles) loads and scores unmasked, so the
    # decomposer no longer finds a K loop masked every iteration (the second runs the boundary tiles only)
    assert built.ttgir.count("scf.for") == base.ttgir.count("scf.for") + 1
    assert "k_loop_masked_every_iteration" in base.patterns
    assert "k_loop_masked_every_iteration" not in built.patterns, built.patterns


def test_split_key_loop_on_an_inline_tile_is_correct(tmp_path: Path) -> None:
    got = _applied((ROOT / JAGGED).read_text(), "split_key_loop")
    # the jagged stop (0 past the sequence's end) is not provably >= lo: the full loop stops at both
    assert "for start_n in range(0, tl.minimum(lo, hi), BLOCK_N):" in got.source
    assert "for start_n in range(lo, hi, BLOCK_N):" in got.source
    first = got.source.split("for start_n in range(0, tl.minimum(lo, hi), BLOCK_N):")[1]
    first = first.split("for start_n")[0]
    assert "mask=" not in first and "tl.where(cols" not in first
    cand = _write(tmp_path, "cand.py", got.source)
    out = correct(JAGGED, cand, {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1})
    assert out.passed, out.summary


def test_causal_tile_skip_bounds_a_loop_over_every_key(tmp_path: Path, compiler) -> None:
    task = ROOT / ALL_KEYS
    # the fixture is the suite's causal task with its loop stop widened to every key, nothing else
    changed = [d for d in difflib.ndiff((ROOT / CAUSAL).read_text().splitlines(), task.read_text().splitlines())
               if d[:1] in "+-" and not d[2:].startswith(("# TEST INPUT", "# (`hi = seq_len`)", "    #"))]
    assert sorted(changed) == ["+     hi = seq_len", f"- {CAUSAL_STOP}"], changed
    got = _applied(task.read_text(), "causal_tile_skip")
    assert "causal_hi = tl.minimum(hi, pid_m * BLOCK_M + BLOCK_M) if IS_CAUSAL else hi" in got.source
    assert "for start_n in range(0, causal_hi, BLOCK_N):" in got.source
    cand = _write(tmp_path, "cand.py", got.source)
    for config in ({}, SMALL):
        out = correct(task, cand, config)
        assert out.passed, (config, out.summary)
    task32 = _write(tmp_path, "all_keys32.py", _fp32(task.read_text()))
    cand32 = _write(tmp_path, "cand32.py", _applied(task32.read_text(), "causal_tile_skip").source)
    out = correct(task32, cand32, SMALL)
    assert out.passed, out.summary
    base, built = build(compiler, task), build(compiler, cand)
    assert "mma" in built.ptx  # the loop's stop, tl.minimum(hi, rows end), is one more min
    assert built.ptx.count("min.s32") > base.ptx.count("min.s32"), (base.ptx.count("min.s32"),
                                                                    built.ptx.count("min.s32"))
    # stacked: the split after the skip is correct too
    both = _write(tmp_path, "both.py", _applied(got.source, "split_key_loop").source)
    out = correct(task, both, SMALL)
    assert out.passed, out.summary


def test_causal_tile_skip_refusals_name_what_is_missing() -> None:
    got = apply((ROOT / CAUSAL).read_text(), "causal_tile_skip")  # the suite's task stops at its rows already
    assert isinstance(got, Refused) and "already stops by the block's rows" in got.reason
    got = apply((ROOT / JAGGED).read_text(), "causal_tile_skip")
    assert isinstance(got, Refused) and "has no causal mask" in got.reason


def test_split_key_loop_refuses_masks_it_cannot_prove() -> None:
    got = apply((ROOT / "benchmarks/tasks/l4_block_sparse_attention.py").read_text(), "split_key_loop")
    assert isinstance(got, Refused) and "no `cols = j + tl.arange(0, BLOCK_N)` key index" in got.reason
    # a sliding window is a key mask of another kind: refused, naming the term
    src = (ROOT / CAUSAL).read_text().replace(
        "keep = keep & (cols[None, :] <= offs_m[:, None])",
        "keep = keep & (cols[None, :] <= offs_m[:, None]) & (cols[None, :] > offs_m[:, None] - 256)")
    got = apply(src, "split_key_loop")
    assert isinstance(got, Refused) and "`(cols[None, :] > offs_m[:, None] - 256)` is neither" in got.reason
    got = apply((ROOT / "benchmarks/tasks/l1_gelu.py").read_text(), "split_key_loop")
    assert isinstance(got, Refused) and "no key loop" in got.reason


def test_the_rules_policy_proposes_them_for_the_masked_key_loop() -> None:
    """The decomposer's finding on the stripped tasks' cuda:90 build (see the compile test) gets the
    transformations that answer it; the ones whose precondition fails are noted with the reason, and each
    proposal patches through the real patcher."""
    from services.planner.context import PlannerContext, read_task
    from services.planner.patcher import PatchRejected, apply_changes
    from services.planner.policies.rules import RulesPolicy
    from shared.tools.decompose import Finding

    assert {"split_key_loop", "causal_tile_skip", "sparse_block_skip"} <= {
        s.name for s in answering("k_loop_masked_every_iteration")}
    for task, kernel, want in ((CAUSAL, "attn_fwd_kernel", "split_key_loop"),
                               (SPARSE, "block_sparse_attn_kernel", "sparse_block_skip")):
        src = (ROOT / task).read_text()
        finding = Finding(pattern="k_loop_masked_every_iteration", severity="medium", score=0.25,
                          locations=[f"{Path(task).name}:60"])
        ctx = PlannerContext(kernel=kernel, kernel_class="attention", task=read_task(str(ROOT / task), src),
                             has_dot=True, findings=[finding])
        plan = RulesPolicy().plan(ctx)
        proposed = [[c.transform for c in p.changes if c.change == "transform"] for p in plan.candidates]
        assert [want] in proposed, (proposed, plan.analysis)
        for c in plan.candidates:
            assert not isinstance(apply_changes(src, c.changes), PatchRejected)
    ctx = PlannerContext(kernel="attn_fwd_kernel", kernel_class="attention",
                         task=read_task(str(ROOT / CAUSAL), (ROOT / CAUSAL).read_text()), has_dot=True,
                         findings=[Finding(pattern="k_loop_masked_every_iteration", severity="medium",
                                           score=0.25, locations=["l3_attention_d64_causal.py:107"])])
    notes = RulesPolicy().plan(ctx).analysis
    assert "causal_tile_skip refused: the key loop over start_n already stops" in notes

SPARSE = "benchmarks/tasks/l4_block_sparse_attention.py"
SPARSE_VARIANT = ROOT / "tests/transforms/tasks/block_sparse_skip_variant.py"


def _sparse_variant_at_skip_1() -> str:
    """The hand-written block-sparse variant with SKIP = 1 folded in: `if (active != 0) | (SKIP == 0):`
    becomes `if active != 0:`, the SKIP parameter, CONFIG/SPACE entries and launch keyword gone."""
    tree = ast.parse(SPARSE_VARIANT.read_text())
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef):
            n.args.args = [a for a in n.args.args if a.arg != "SKIP"]
        if isinstance(n, ast.If) and "SKIP" in ast.unparse(n.test):
            assert ast.unparse(n.test) == "(active != 0) | (SKIP == 0)"
            n.test = ast.parse("active != 0", mode="eval").body
        if isinstance(n, ast.Call):
            n.keywords = [k for k in n.keywords if k.arg != "SKIP"]
    return ast.unparse(tree)


def test_sparse_block_skip_on_the_stripped_task_is_the_skip_variant(tmp_path: Path, compiler) -> None:
    src = (ROOT / SPARSE).read_text()
    assert "SKIP" not in src  # the task holds its straightforward (dense, masked) kernel only
    got = _applied(src, "sparse_block_skip")
    want, have = _functions(_sparse_variant_at_skip_1()), _functions(got.source)
    for fn in ("block_sparse_attn_kernel", "launch"):
        assert have[fn] == want[fn], fn
    again = apply(got.source, "sparse_block_skip")
    assert isinstance(again, Refused)
    assert "already sits under a block branch `if active != 0:`" in again.reason
    cand = _write(tmp_path, "cand.py", got.source)
    for config in ({}, {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 1}):  # micro s 192: 3 x 3 blocks
        out = correct(SPARSE, cand, config)  # edge s 1 and 100 (a ragged last block)
        assert out.passed, (config, out.summary)
    base32 = _write(tmp_path, "task32.py", _fp32(src))
    cand32 = _write(tmp_path, "cand32.py", _applied(base32.read_text(), "sparse_block_skip").source)
    out = correct(base32, cand32, {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 1})
    assert out.passed, out.summary
    base, built = build(compiler, SPARSE), build(compiler, cand)
    assert "mma" in built.ptx
    # the branch over the inactive block: one more scf.if in the kernel, around the tile loop
    assert built.ttgir.count("scf.if") == base.ttgir.count("scf.if") + 1


def test_sparse_block_skip_refuses_kernels_without_a_block_flag() -> None:
    for task in (CAUSAL, JAGGED):
        got = apply((ROOT / task).read_text(), "sparse_block_skip")
        assert isinstance(got, Refused) and "no loop nested directly in another loop" in got.reason
    src = (ROOT / SPARSE).read_text().replace("keep = (cols[None, :] < seq_len) & (active != 0)",
                                              "keep = cols[None, :] < seq_len")
    got = apply(src, "sparse_block_skip")
    assert isinstance(got, Refused) and "share no scalar term set once per outer iteration" in got.reason


def test_split_key_loop_refuses_a_shared_helper_and_a_moving_bound() -> None:
    src = (ROOT / CAUSAL).read_text()
    # a second call of the tile helper: specialising it for this loop would change the other caller
    two = src.replace("    acc = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]\n",
                      "    acc, l_i, m_i = attn_tile(acc, l_i, m_i, q, k_base, v_base, 0, offs_m, offs_n, offs_d, "
                      "seq_len, stride_ks, stride_vs, qk_scale, IS_CAUSAL=IS_CAUSAL)\n"
                      "    acc = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]\n", 1)
    got = apply(two, "split_key_loop")
    assert isinstance(got, Refused) and "attn_tile is called 2 times" in got.reason
    # an inline tile that moves its own bound: `cols < seq_len` no longer bounds the loop
    jag = (ROOT / JAGGED).read_text().replace("        m_i = m_new\n", "        m_i = m_new\n        seq_len = seq_len - 1\n")
    got = apply(jag, "split_key_loop")
    assert isinstance(got, Refused) and "`cols[None, :] < seq_len` is neither" in got.reason

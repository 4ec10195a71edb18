"""relayout_intermediate on the three-kernel pipeline (benchmarks/tasks/l3_pipeline.py), which holds only
its straightforward form now: x allocated feature-major (b, e, s) by launch(), written by embed_kernel and
read by attn_kernel through the strides the launches pass. The transformation allocates x token-major,
which is exactly the removed X_LAYOUT = 1 variant's addressing, passes the interpreter on micro and edge
shapes, and takes away the decomposer's uncoalesced_strided_access on the producer's store."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from services.planner.context import PlannerContext, read_task
from services.planner.policies.rules import RulesPolicy
from shared.tools.decompose import Finding
from shared.transforms.base import Applied, Refused
from shared.transforms.table import apply
from tests.transforms.harness import ROOT, candidate, correct, make_compiler

PIPE = "benchmarks/tasks/l3_pipeline.py"
ALLOC = "x = torch.empty((B, S, E), device=table.device, dtype=table.dtype).permute(0, 2, 1)"


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_compiler(tmp_path_factory.mktemp("kpilot-compile"))


def _module(path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _x_strides(path: Path, shape: dict[str, int]) -> dict[str, tuple[int, int, int]]:
    """The (stride_xb, stride_xe, stride_xs) each kernel is launched with: launch() run with the kernels
    replaced by recorders (nothing runs; only what launch() hands them)."""
    mod = _module(path)
    seen: dict[str, tuple[int, int, int]] = {}

    class Recorder:
        def __init__(self, name: str, kernel) -> None:  # type: ignore[no-untyped-def]
            self.name, self.params = name, kernel.arg_names

        def __getitem__(self, grid):  # type: ignore[no-untyped-def]
            def call(*args, **kw):  # type: ignore[no-untyped-def]
                named = dict(zip(self.params, args, strict=False))
                if "stride_xb" in named:
                    seen[self.name] = (named["stride_xb"], named["stride_xe"], named["stride_xs"])
            return call

    for name in ("embed_kernel", "attn_kernel", "ffn_kernel"):
        setattr(mod, name, Recorder(name, getattr(mod, name)))
    inputs = mod.make_inputs(shape | {"dtype": "float16"}, 0, "cpu")
    mod.launch(inputs, **{k: v for k, v in mod.CONFIG.items()})
    return seen


def test_the_pipeline_task_holds_no_layout_switch() -> None:
    src = (ROOT / PIPE).read_text()
    assert "X_LAYOUT" not in src and "_x_strides" not in src
    task = read_task(str(ROOT / PIPE), src)
    assert task.config and "X_LAYOUT" not in task.config


def test_relayout_reproduces_the_token_major_variant_and_is_correct(tmp_path: Path) -> None:
    cand, got = candidate(PIPE, "relayout_intermediate", tmp_path)
    assert ALLOC in got.source
    assert "# x as (b, e, s): feature-major, the producer's naive column-store layout" in got.source
    b, s, h, d = 2, 45, 3, 32
    e = h * d
    shape = {"b": b, "s": s, "h": h, "d": d, "f": 80, "v": 101}
    before, after = _x_strides(ROOT / PIPE, shape), _x_strides(cand, shape)
    # the removed variants' strides (b, s, head, dim) = X_LAYOUT 0: (E S, 1, D S, S); 1: (S E, E, D, 1)
    assert before == {"embed_kernel": (e * s, s, 1), "attn_kernel": (e * s, s, 1)}  # layout 0
    assert after == {"embed_kernel": (s * e, 1, e), "attn_kernel": (s * e, 1, e)}  # layout 1: token-major
    out = correct(PIPE, cand)  # micro b1 s32 h2 d16; edge s = 1 and s = 45 with 3 heads of 32
    assert out.passed, out.summary


def test_relayout_takes_away_the_producers_uncoalesced_store(tmp_path: Path, compiler) -> None:
    import msgspec

    from services.decomposer.analyze import artifacts_from
    from services.decomposer.decompose import decompose
    from shared.tools.compile import CompileInput

    cand, _ = candidate(PIPE, "relayout_intermediate", tmp_path)

    def patterns(path: Path) -> list[str]:
        out = compiler.run(CompileInput(task_path=str(path), config={}, include_text=True, kernel="embed_kernel"))
        return [f.pattern for f in decompose(artifacts_from(msgspec.to_builtins(out), None)).findings]
    assert "uncoalesced_strided_access" in patterns(ROOT / PIPE)  # tt.store bf16[64]: lanes S apart
    assert "uncoalesced_strided_access" not in patterns(cand)


def test_relayout_refusals_name_what_is_missing() -> None:
    src = (ROOT / PIPE).read_text()
    once = apply(src, "relayout_intermediate")
    assert isinstance(once, Applied)
    again = apply(once.source, "relayout_intermediate")
    assert isinstance(again, Refused) and "x's dim 1 (E), which the consumer's accesses walk, is already its" \
        " innermost" in again.reason
    got = apply((ROOT / "benchmarks/tasks/l2_bmm.py").read_text(), "relayout_intermediate")
    assert isinstance(got, Refused) and "no intermediate tensor" in got.reason
    computed = src.replace("        x.stride(0),\n        x.stride(1),\n        x.stride(2),\n        S * E,\n",
                           "        E * S,\n        S,\n        1,\n        S * E,\n")
    assert computed != src
    got = apply(computed, "relayout_intermediate")
    assert isinstance(got, Refused) and "attn_kernel's launch does not pass every x.stride(i)" in got.reason
    seen = src.replace("    embed_kernel[(T,)](", "    x.zero_()\n    embed_kernel[(T,)](")
    got = apply(seen, "relayout_intermediate")
    assert isinstance(got, Refused) and "x is used outside kernel arguments" in got.reason


def test_the_rules_policy_proposes_it_for_an_uncoalesced_finding() -> None:
    src = (ROOT / PIPE).read_text()
    ctx = PlannerContext(kernel="embed_kernel", kernel_class="elementwise", task=read_task(str(ROOT / PIPE), src),
                         has_dot=False, findings=[Finding(pattern="uncoalesced_strided_access", severity="high",
                                                          score=0.9, locations=["l3_pipeline.py:50"])])
    plan = RulesPolicy().plan(ctx)
    proposed = [c for p in plan.candidates for c in p.changes if c.change == "transform"]
    assert {(c.transform, c.params["follow"]) for c in proposed if c.transform == "relayout_intermediate"} == {
        ("relayout_intermediate", "consumer"), ("relayout_intermediate", "producer")}, plan.analysis

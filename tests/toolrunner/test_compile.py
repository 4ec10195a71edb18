"""The compile tool on CPU: every example builds for cuda:90 (TTIR ... cubin, or PTX + cubin for CUDA C++),
with Triton's own specialization of the launch arguments; results are cached by content; bad requests
are refused naming what exists."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest

from services.toolrunner.artifacts import LocalArtifactStore, LocalResultCache, sha256_hex
from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.compile.spec import SPEC, Compiler, cache_key, resolve
from shared.tools.compile import CompileInput, CompileOutput

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TRITON_EXAMPLES = {
    "vector_add": "add_kernel",
    "row_softmax": "softmax_kernel",
    "matmul": "matmul_kernel",
    "attention_fwd": "attn_fwd_kernel",
    "kernelbench_relu": "relu_kernel",
}


def make_compiler(tmp_path_factory: pytest.TempPathFactory) -> Compiler:
    # One directory per test session: test_ptxas_info.py reuses these compiles from the disk cache.
    root = tmp_path_factory.getbasetemp() / "kpilot-compile"
    return Compiler(store=LocalArtifactStore(root / "artifacts"), cache=LocalResultCache(root / "cache"))


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory) -> Compiler:
    return make_compiler(tmp_path_factory)


@pytest.fixture(scope="module")
def outputs(compiler: Compiler) -> dict[str, CompileOutput]:
    names = [*TRITON_EXAMPLES, "transpose_cuda"]
    return {n: compiler.run(CompileInput(task_path=str(EXAMPLES / f"{n}.py"))) for n in names}


def _param(out: CompileOutput, name: str) -> tuple[str, object, bool]:
    p = next(p for p in out.params if p.name == name)
    return p.type, p.value, p.divisible_by_16


def test_every_triton_example_builds_all_stages(
    compiler: Compiler, outputs: dict[str, CompileOutput]
) -> None:
    for name, kernel in TRITON_EXAMPLES.items():
        out = outputs[name]
        assert out.kernel == kernel and out.kernel_names == [kernel], name
        assert [a.kind for a in out.artifacts] == ["source", "ttir", "ttgir", "llir", "ptx", "cubin"]
        assert out.arch == "sm_90a" and out.target == "cuda:90" and out.inputs_device == "meta"
        ptx = compiler.text(out, "ptx")
        assert ".target sm_90a" in ptx and f".entry {kernel}(" in ptx
        assert f"@{kernel}" in compiler.text(out, "ttir")
        assert '"ttg.num-warps" = 4' in compiler.text(out, "ttgir")
        cubin = compiler.store.get(out.artifact("cubin").sha256)
        assert cubin[:4] == b"\x7fELF" and kernel.encode() in cubin
        for a in out.artifacts:
            assert sha256_hex(compiler.store.get(a.sha256)) == a.sha256 and a.size > 0
        assert {v.name for v in out.tool_versions} == {"triton", "torch", "triton_ptxas"}
        assert json.loads(out.specialization)["name"].endswith(kernel)


def test_cuda_example_builds_with_nvcc(compiler: Compiler, outputs: dict[str, CompileOutput]) -> None:
    out = outputs["transpose_cuda"]
    assert out.kind == "cuda" and out.kernel_names == ["transpose_naive"]
    assert [a.kind for a in out.artifacts] == ["source", "ptx", "cubin"]
    assert ".target sm_90a" in compiler.text(out, "ptx")
    assert compiler.store.get(out.artifact("cubin").sha256)[:4] == b"\x7fELF"
    assert [v.name for v in out.tool_versions] == ["cuda_nvcc"] and out.params == []


def test_specialization_is_tritons(outputs: dict[str, CompileOutput]) -> None:
    mm = outputs["matmul"]
    # Pointers from fresh allocations and 8192-multiples carry Triton's divisibility-by-16 hint;
    # unit strides become constants (Triton specializes ints equal to 1).
    assert _param(mm, "a_ptr") == ("*bf16", None, True)
    assert _param(mm, "K") == ("i32", None, True)
    assert _param(mm, "stride_ak") == ("constexpr", 1, False)
    assert _param(mm, "BLOCK_M") == ("constexpr", 32, False)
    assert mm.num_warps == 4 and mm.shape_values == {"m": 8192, "n": 8192, "k": 8192}
    attn = outputs["attention_fwd"]
    assert _param(attn, "sm_scale") == ("fp32", None, False)  # floats are never specialized
    assert _param(attn, "HEAD_DIM") == ("constexpr", 128, False)


def test_odd_shape_loses_the_divisibility_hint(compiler: Compiler, outputs: dict[str, CompileOutput]) -> None:
    assert _param(outputs["vector_add"], "n") == ("i32", None, True)  # 2^26
    edge = compiler.run(CompileInput(task_path=str(EXAMPLES / "vector_add.py"), shape="edge:1"))  # n = 100003
    assert _param(edge, "n") == ("i32", None, False)
    assert edge.cache_key != outputs["vector_add"].cache_key
    assert edge.artifact("ttir").sha256 != outputs["vector_add"].artifact("ttir").sha256


def test_second_compile_is_a_cache_hit(compiler: Compiler, outputs: dict[str, CompileOutput]) -> None:
    hits = compiler.hits
    again = compiler.run(CompileInput(task_path=str(EXAMPLES / "matmul.py")))
    assert compiler.hits == hits + 1
    assert again == outputs["matmul"]
    with_text = compiler.run(CompileInput(task_path=str(EXAMPLES / "matmul.py"), include_text=True))
    texts = {a.kind: a.text for a in with_text.artifacts}
    assert texts["cubin"] is None and texts["ptx"] == compiler.text(outputs["matmul"], "ptx")


def test_cache_key_covers_config_target_shape_and_versions(outputs: dict[str, CompileOutput]) -> None:
    r = resolve(CompileInput(task_path=str(EXAMPLES / "matmul.py")))
    versions = outputs["matmul"].tool_versions
    base = cache_key(r, "cuda:90", versions)
    assert base == outputs["matmul"].cache_key
    other_config = resolve(CompileInput(task_path=str(EXAMPLES / "matmul.py"), config={"BLOCK_K": 64}))
    other_shape = resolve(CompileInput(task_path=str(EXAMPLES / "matmul.py"), shape="micro"))
    newer = [
        msgspec.structs.replace(v, version=v.version + ".1") if v.name == "triton_ptxas" else v
        for v in versions
    ]
    keys = {
        base,
        cache_key(other_config, "cuda:90", versions),
        cache_key(other_shape, "cuda:90", versions),
        cache_key(r, "cuda:80", versions),
        cache_key(r, "cuda:90", newer),
    }
    assert len(keys) == 5


def test_failed_compile_is_a_structured_failure(compiler: Compiler) -> None:
    # wgmma needs >= 90 registers per thread: ptxas refuses maxnreg 64 for a 128x128 tile (error C7602).
    args = CompileInput(
        task_path=str(EXAMPLES / "matmul.py"),
        config={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "maxnreg": 64},
    )
    with pytest.raises(ToolFailure) as info:
        compiler.run(args)
    assert info.value.code == "failed" and "Insufficient registers" in info.value.message


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"kernel": "nope"}, "kernel 'nope' is not in task matmul; its kernels are ['matmul_kernel']"),
        ({"config": {"BLOK_M": 64}}, "config keys ['BLOK_M'] are not in the task's CONFIG"),
        ({"target": "sm_90"}, "is not of the form cuda:<capability>"),
        ({"shape": "huge"}, "unknown shape 'huge': this task has micro, full, edge:0, edge:1"),
    ],
)
def test_check_refuses_with_the_names_that_exist(args: dict[str, object], needle: str) -> None:
    req = msgspec.convert({"task_path": str(EXAMPLES / "matmul.py"), **args}, CompileInput)
    assert SPEC.check is not None
    with pytest.raises(ToolFailure) as info:
        SPEC.check(req)
    assert info.value.code == "refused" and needle in info.value.message


def test_check_refuses_a_broken_task(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("KERNELS = ()\n")
    with pytest.raises(ToolFailure) as info:
        SPEC.check(CompileInput(task_path=str(bad)))
    assert info.value.code == "refused" and any("KERNELS" in v for v in info.value.violations)


def test_spec() -> None:
    assert SPEC.name == "compile" and SPEC.cacheable and not SPEC.needs_gpu
    assert SPEC.input is CompileInput and SPEC.output is CompileOutput


def test_local_store_is_content_addressed(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    key = store.put(b"ptx text")
    assert key == sha256_hex(b"ptx text") and store.has(key) and store.get(key) == b"ptx text"
    assert store.put(b"ptx text") == key
    with pytest.raises(KeyError, match="not in the store"):
        store.get(sha256_hex(b"other"))
    with pytest.raises(KeyError, match="not a sha256"):
        store.get("../../etc/passwd")


@pytest.mark.gpu
def test_compile_matches_tritons_own_jit_on_the_gpu(compiler: Compiler) -> None:
    """On the H200: the PTX Triton's JIT builds for a real launch equals the compile tool's."""
    import torch

    from services.toolrunner.task_runtime import import_task, runtime_for

    for name, kernel in TRITON_EXAMPLES.items():
        path = EXAMPLES / f"{name}.py"
        module = import_task(path)
        rt = runtime_for(module)
        inputs = rt.make_inputs(module.SHAPES["micro"] if hasattr(module, "SHAPES") else {}, 0, "cuda")
        rt.launch(inputs, **getattr(module, "CONFIG", {}))
        torch.cuda.synchronize()
        jit = next(v for v in vars(module).values() if getattr(v, "__name__", "") == kernel)
        (real,) = jit.device_caches[torch.cuda.current_device()][0].values()
        ours = compiler.run(
            CompileInput(task_path=str(path), shape="micro" if hasattr(module, "SHAPES") else "full")
        )
        if out_dir := os.environ.get("KPILOT_FIXTURE_OUT"):
            Path(out_dir, f"jit_{name}.ptx").write_text(real.asm["ptx"])
        assert sha256_hex(real.asm["ptx"].encode()) == ours.artifact("ptx").sha256, name

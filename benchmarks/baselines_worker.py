"""Worker (run through services/toolrunner/sandbox.run_worker): time library baselines or the roofline.

GPU only. Uses the bench tool's timing module (services/toolrunner/worker_lib/gpu_timing.py: do_bench's
method, 256 MiB L2 flush outside the event pair, NVML-capped samples dropped), so baseline figures and the
suite's kernel figures are taken the same way.
  kind "task":     a task's BASELINES at its full shape, plus torch.compile(mode="max-autotune") of its
                   `eager` unless skipped
  kind "check":    CPU, no timing: every BASELINES function on the micro shape in fp32 against the task's
                   reference (catches a baseline that computes something else before GPU time is spent)
  kind "roofline": the copy bandwidth (dst.copy_(src) of 2^28 fp32, bytes read + written) and the bf16
                   tensor peak (torch.matmul 8192^3)
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

ROOFLINE_COPY_N = 1 << 28  # fp32 elements: 1 GiB per side, far beyond the 60 MB L2
ROOFLINE_GEMM_N = 8192


class BaselineJob(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kind: Literal["task", "roofline", "check"]
    task_path: str = ""
    task_paths: list[str] = []  # kind "check": every task in one process (one torch import, not 22)
    names: list[str] = []  # which baselines; "compile" = torch.compile of "eager"
    seed: int = 0
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    gpu: int = 0


class BaselineTiming(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    median_ms: float | None
    p20_ms: float | None = None
    p80_ms: float | None = None
    n: int = 0
    cuda_graph: bool = False
    error: str = ""
    compile_s: float | None = None  # torch.compile's first call (tracing + autotuning), for "compile"


# fp32 on both sides of the check: only summation order and library algorithms differ (1e-3 covers
# K-long dot products of N(0, 1) values, |error| ~ sqrt(K) * 2^-24 * |x|).
CHECK_TOLERANCE = 1e-3


class BaselineCheck(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task: str
    name: str
    passed: bool
    max_abs_err: float | None = None
    error: str = ""


class BaselineResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    timings: dict[str, BaselineTiming]
    device: str
    driver: str
    cuda: str
    torch: str
    triton: str
    method: str
    copy_bytes_per_s: float | None = None
    bf16_flops_per_s: float | None = None
    checks: list[BaselineCheck] = []
    # kind "check": task -> [flops, bytes_moved] of its full shape (the roofline needs both >= 0, finite)
    costs: dict[str, list[float]] = {}


def _stem(task_path: str) -> str:
    return task_path.rsplit("/", 1)[-1].removesuffix(".py")


def _costs(task_path: str) -> list[float]:
    from services.toolrunner.task_runtime import import_task

    module = import_task(task_path)
    full = dict(module.SHAPES["full"])
    return [float(module.flops(full)), float(module.bytes_moved(full))]


def check(task_path: str, seed: int) -> list[BaselineCheck]:
    import torch

    from services.toolrunner.task_runtime import import_task

    task = task_path.rsplit("/", 1)[-1].removesuffix(".py")
    try:
        module = import_task(task_path)
    except Exception as e:  # noqa: BLE001
        return [BaselineCheck(task=task, name="import", passed=False, error=f"{type(e).__name__}: {e}"[:300])]
    inputs = module.make_inputs({**module.SHAPES["micro"], "dtype": "float32"}, seed, "cpu")
    ref = module.reference(inputs)
    out = []
    for name, fn in dict(getattr(module, "BASELINES", {})).items():
        try:
            got = fn(inputs)
            err = float((got.float() - ref.float()).abs().max()) if got.numel() else 0.0
            ok = got.shape == ref.shape and torch.allclose(
                got.float(), ref.float(), atol=CHECK_TOLERANCE, rtol=CHECK_TOLERANCE
            )
            out.append(
                BaselineCheck(
                    task=task,
                    name=name,
                    passed=bool(ok),
                    max_abs_err=err,
                    error="" if got.shape == ref.shape else f"shape {tuple(got.shape)}",
                )
            )
        except Exception as e:  # noqa: BLE001
            out.append(
                BaselineCheck(task=task, name=name, passed=False, error=f"{type(e).__name__}: {e}"[:300])
            )
    return out


def _tensors(x: Any) -> list[Any]:
    """The tensors in a task's inputs (a tensor, or tuples/lists/dicts of them), in order."""
    import torch

    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    if isinstance(x, list | tuple):
        return [t for v in x for t in _tensors(v)]
    return []


def _time(
    fn: Any, bench: Any, nvml: Any, job: BaselineJob, graph_mode: str = "auto"
) -> tuple[BaselineTiming, str]:
    from services.toolrunner.timing_stats import drop_capped, summarize
    from services.toolrunner.worker_lib.gpu_timing import describe

    plan = bench.plan(bench.estimate(fn), job.warmup_ms, job.rep_ms, graph_mode)
    (timed,) = bench.run([fn], plan, nvml)
    kept, _, _ = drop_capped(timed.samples, timed.masks)
    s = summarize(kept)
    return (
        BaselineTiming(median_ms=s.median_ms, p20_ms=s.p20_ms, p80_ms=s.p80_ms, n=s.n, cuda_graph=plan.graph),
        describe(plan),
    )


def main() -> None:
    import time

    import torch

    from services.toolrunner.worker_lib.gpu_timing import Bench, Nvml, provenance
    from services.toolrunner.worker_lib.io import read_request, write_result

    job = read_request(BaselineJob)
    if job.kind == "check":
        write_result(
            BaselineResult(
                timings={},
                device="cpu",
                driver="",
                cuda="",
                torch=str(torch.__version__),
                triton="",
                method="no timing: CPU check",
                checks=[c for p in job.task_paths for c in check(p, job.seed)],
                costs={_stem(p): _costs(p) for p in job.task_paths},
            )
        )
        return
    nvml = Nvml(job.gpu)
    bench = Bench()
    timings: dict[str, BaselineTiming] = {}
    method = ""
    extra: dict[str, float | None] = {}
    if job.kind == "roofline":
        src = torch.randn(ROOFLINE_COPY_N, device="cuda")
        dst = torch.empty_like(src)
        timings["copy"], method = _time(lambda: dst.copy_(src), bench, nvml, job)
        del src, dst
        n = ROOFLINE_GEMM_N
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        timings["bf16_matmul"], _ = _time(lambda: torch.matmul(a, b), bench, nvml, job)
        copy_ms, mm_ms = timings["copy"].median_ms, timings["bf16_matmul"].median_ms
        extra["copy_bytes_per_s"] = 2 * 4 * ROOFLINE_COPY_N / (copy_ms * 1e-3) if copy_ms else None
        extra["bf16_flops_per_s"] = 2.0 * n**3 / (mm_ms * 1e-3) if mm_ms else None
    else:
        from services.toolrunner.task_runtime import import_task

        module = import_task(job.task_path)
        inputs = module.make_inputs(dict(module.SHAPES["full"]), job.seed, "cuda")
        fns = dict(getattr(module, "BASELINES", {}))
        for name in job.names:
            try:
                if name == "compile":
                    # The inputs keep their addresses for every call, and saying so keeps max-autotune's
                    # CUDA graph from copying them into its own pool on each call: H200 run 14 timed that
                    # copy (+0.15-0.30 ms on the L1 tasks, slower than eager) instead of the kernels.
                    for t in _tensors(inputs):
                        torch._dynamo.mark_static_address(t)
                    compiled = torch.compile(fns["eager"], mode="max-autotune")
                    t = time.perf_counter()
                    compiled(inputs)
                    torch.cuda.synchronize()
                    compile_s = time.perf_counter() - t
                    # mode="max-autotune" replays its own CUDA graph (cudagraph trees): capturing it
                    # again in the bench's graph would nest captures, so its calls are timed plainly.
                    timing, method = _time(lambda c=compiled: c(inputs), bench, nvml, job, "off")
                    timing.compile_s = compile_s
                else:
                    fn = fns[name]
                    timing, method = _time(lambda fn=fn: fn(inputs), bench, nvml, job)
                timings[name] = timing
            except Exception as e:  # noqa: BLE001 - a baseline that fails is a result, not a crash
                first = (str(e).strip().splitlines() or [""])[0][:300]
                timings[name] = BaselineTiming(median_ms=None, error=f"{type(e).__name__}: {first}")
    prov = provenance(nvml, method)
    write_result(
        BaselineResult(
            timings=timings,
            device=prov.device,
            driver=prov.driver,
            cuda=prov.cuda,
            torch=prov.torch,
            triton=prov.triton,
            method=method,
            **extra,
        )
    )


if __name__ == "__main__":
    main()

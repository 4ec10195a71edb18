"""Worker: time a task's launch (bench) or two versions interleaved (bench_ab) on the GPU."""

from __future__ import annotations

from typing import Literal

import msgspec

from services.toolrunner.timing_stats import bootstrap_ratio_ci, drop_capped, summarize
from services.toolrunner.worker_lib.gpu_timing import (
    FLUSH_BYTES,
    Bench,
    Nvml,
    Plan,
    Timed,
    describe,
    provenance,
)
from services.toolrunner.worker_lib.io import read_request, write_result
from services.toolrunner.worker_lib.task_call import prepare
from shared.tools.bench import BenchABInput, BenchABOutput, BenchInput, BenchMethod, BenchOutput, BenchSide


class BenchJob(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kind: Literal["single", "ab"]
    single: BenchInput | None = None
    ab: BenchABInput | None = None


def _method(
    plan: Plan, warmup_ms: float, rep_ms: float, interleaved: int, dropped: int, kept_all: bool
) -> BenchMethod:
    return BenchMethod(
        description=describe(plan, interleaved),
        warmup_ms=warmup_ms,
        rep_ms=rep_ms,
        estimate_ms=plan.estimate_ms,
        n_warmup=plan.n_warmup,
        n_reps=plan.n_reps,
        cuda_graph=plan.graph,
        calls_per_sample=plan.calls_per_sample,
        flush_bytes=FLUSH_BYTES,
        dropped_throttled=dropped,
        throttled_kept=kept_all,
        graph_fallback=plan.graph_fallback,
    )


def _kept(t: Timed) -> tuple[list[float], int, bool]:
    return drop_capped(t.samples, t.masks)


def single(req: BenchInput) -> BenchOutput:
    call = prepare(req.task_path, req.shape, dict(req.config), req.seed)
    nvml = Nvml(req.gpu)
    bench = Bench()
    plan = bench.plan(bench.estimate(call, call.restore), req.warmup_ms, req.rep_ms, req.cuda_graph,
                      restored=bool(call.inplace),
                      refusal=lambda: bench.graph_refusal(call, call.module.__file__ or "", call.restore))
    before = nvml.sample()
    (timed,) = bench.run([call], plan, nvml, [call.restore])
    after = nvml.sample()
    samples, dropped, kept_all = _kept(timed)
    stats = summarize(samples)
    flops, moved = call.flops(), call.bytes_moved()
    method = _method(plan, req.warmup_ms, req.rep_ms, 1, dropped, kept_all)
    return BenchOutput(
        samples_ms=samples,
        stats=stats,
        method=method,
        clocks_before=before,
        clocks_after=after,
        config=call.config,
        tflops=flops / (stats.median_ms * 1e-3) / 1e12 if flops else None,
        tbytes_per_s=moved / (stats.median_ms * 1e-3) / 1e12 if moved else None,
        provenance=provenance(nvml, method.description),
    )


def ab(req: BenchABInput) -> BenchABOutput:
    a = prepare(req.a.task_path, req.shape, dict(req.a.config), req.seed)
    b = prepare(req.b.task_path, req.shape, dict(req.b.config), req.seed)
    nvml = Nvml(req.gpu)
    bench = Bench()
    # Size both sides by the slower one so each gets at least rep_ms of samples.
    def refusal() -> str:  # either side's host sync keeps both off the graph: one method for the pair
        for label, side in ((req.a.label or "a", a), (req.b.label or "b", b)):
            if why := bench.graph_refusal(side, side.module.__file__ or "", side.restore):
                return f"{label}: {why}"
        return ""

    plan = bench.plan(max(bench.estimate(a, a.restore), bench.estimate(b, b.restore)), req.warmup_ms,
                      req.rep_ms, req.cuda_graph, restored=bool(a.inplace or b.inplace), refusal=refusal)
    before = nvml.sample()
    ta, tb = bench.run([a, b], plan, nvml, [a.restore, b.restore])
    after = nvml.sample()
    # Drop a round from both sides when either was capped, so the pairs stay comparable.
    masks = [
        None if ma is None and mb is None else (ma or 0) | (mb or 0) for ma, mb in zip(ta.masks, tb.masks)
    ]
    sa, dropped, kept_all = drop_capped(ta.samples, masks)
    sb, _, _ = drop_capped(tb.samples, masks)
    speedup, lo, hi = bootstrap_ratio_ci(sa, sb, n=req.n_bootstrap, seed=req.bootstrap_seed)
    method = _method(plan, req.warmup_ms, req.rep_ms, 2, dropped, kept_all)
    return BenchABOutput(
        a=BenchSide(label=req.a.label or "a", config=a.config, samples_ms=sa, stats=summarize(sa)),
        b=BenchSide(label=req.b.label or "b", config=b.config, samples_ms=sb, stats=summarize(sb)),
        speedup=speedup,
        ci_low=lo,
        ci_high=hi,
        method=method,
        clocks_before=before,
        clocks_after=after,
        provenance=provenance(nvml, method.description),
    )


def main() -> None:
    job = read_request(BenchJob)
    if job.kind == "single" and job.single is not None:
        write_result(single(job.single))
    elif job.kind == "ab" and job.ab is not None:
        write_result(ab(job.ab))
    else:
        raise SystemExit(f"bench job {job.kind!r} without its request")


if __name__ == "__main__":
    main()

"""Worker: time every config of a task's space the way Triton's autotuner does.

Triton's `Autotuner._bench` calls its benchmarker (`driver.active.get_benchmarker()`, i.e.
triton.testing.do_bench) with quantiles (0.5, 0.2, 0.8) and turns OutOfResources,
CompileTimeAssertionFailure and PTXASError into [inf, inf, inf]. The task's `launch(inputs, **config)` owns
the grid and arguments, so the Autotuner object itself cannot wrap it; this is the same loop over
`launch`, with the same benchmarker and the same failure rule. Other exceptions also mark the config
failed (with the error) instead of aborting the sweep.
"""

from __future__ import annotations

from services.toolrunner.tools.autotune.config_space import expand, merge
from services.toolrunner.worker_lib.gpu_timing import Nvml, provenance
from services.toolrunner.worker_lib.io import read_request, write_result
from services.toolrunner.worker_lib.task_call import prepare
from shared.tools.bench import AutotuneInput, AutotuneOutput, ConfigTiming

METHOD = (
    "triton autotuner method: driver.active.get_benchmarker() (triton.testing.do_bench: 256 MiB L2 "
    "flush before each call, warm-up and reps from time budgets) per config, quantiles (0.5, 0.2, 0.8); "
    "OutOfResources / CompileTimeAssertionFailure / PTXASError -> failed (inf in Triton)"
)


def main() -> None:
    req = read_request(AutotuneInput)
    import triton
    from triton.compiler.errors import CompileTimeAssertionFailure
    from triton.runtime.errors import OutOfResources, PTXASError

    compile_errors = (OutOfResources, CompileTimeAssertionFailure, PTXASError)
    call = prepare(req.task_path, req.shape, {}, req.seed)
    base = dict(getattr(call.module, "CONFIG", {}) or {})
    if req.configs:
        configs = merge(base, req.configs)
    else:
        configs = expand(
            base,
            getattr(call.module, "SPACE", {}) or {},
            getattr(call.module, "constraint", None),
            call.shape,
        )
    space_size = len(configs)
    configs = configs[: req.max_configs]
    benchmarker = triton.runtime.driver.active.get_benchmarker()
    nvml = Nvml(req.gpu)
    before = nvml.sample()
    results = []
    for cfg in configs:
        fn = call.with_config(cfg)
        try:
            med, p20, p80 = benchmarker(fn, warmup=req.warmup_ms, rep=req.rep_ms, quantiles=(0.5, 0.2, 0.8))
            results.append(ConfigTiming(config=cfg, median_ms=med, p20_ms=p20, p80_ms=p80))
        except compile_errors as e:
            results.append(
                ConfigTiming(
                    config=cfg,
                    median_ms=None,
                    compile_error=True,
                    error=f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}",
                )
            )
        except Exception as e:  # noqa: BLE001 - a config that breaks the launch is a result
            first = (str(e).strip().splitlines() or [""])[0][:300]
            results.append(ConfigTiming(config=cfg, median_ms=None, error=f"{type(e).__name__}: {first}"))
    after = nvml.sample()
    ok = [r for r in results if r.median_ms is not None]
    best = min(ok, key=lambda r: r.median_ms or 0.0) if ok else None
    write_result(
        AutotuneOutput(
            results=results,
            best=best,
            space_size=space_size,
            method=METHOD,
            clocks_before=before,
            clocks_after=after,
            provenance=provenance(nvml, METHOD),
        )
    )


if __name__ == "__main__":
    main()

"""Launch telemetry SDK: a workload imports this to report which Triton kernels it launches.

    from services.telemetry.sdk import LaunchTelemetry
    tel = LaunchTelemetry(sample_fraction=1 / 16)
    tel.instrument(matmul_kernel, add_kernel)  # grid + config capture (optional, see below)
    tel.install()
    ...  # run the workload
    records = tel.drain()  # -> list[LaunchRecord]; the publisher sends them, kernel_shares() sums them

How it hooks Triton 3.6.0 (triton/knobs.py, runtime/jit.py, compiler/compiler.py): every launch of a
compiled kernel calls `knobs.runtime.launch_enter_hook(metadata)` before and `launch_exit_hook(metadata)`
after the driver launch (both are HookChains; we `add` to them, so other hooks such as proton's keep
working). `metadata` is a LazyDict with "name", "function" and "stream"; when the JITFunction has a
`launch_metadata` callable, Triton merges `fn.launch_metadata(grid, kernel.metadata, arg_dict)` into it on
`.get()`. `instrument()` installs such a callable to capture the grid, num_warps/num_stages/num_ctas and
the constexpr values; without it the record carries only the kernel name. Triton's interpreter
(TRITON_INTERPRET=1) runs kernels without these hooks, so there `install()` wraps the interpreter's entry
(`InterpretedFunction.run`, which every `kernel[grid](...)` reaches) instead; pass `timer=WallClockTimer()`
to time those launches, which run on the host (their time is the interpreter's, not a GPU's).

Durations: on every `1/sample_fraction`-th launch of a kernel, a CUDA event pair brackets the launch on the
current stream (Triton launches on torch's current stream); elapsed times are collected at `drain()`
without synchronising (pairs not finished yet wait for the next drain). Untimed launches are counted, not
timed: a record's `durations_us` holds measurements only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from services.telemetry.records import LaunchRecord
from shared.messages import KernelShare, Scalar

_GRID = "kpilot_grid"
_CONFIG = "kpilot_config"
MAX_PENDING = 4096  # timed launches waiting for their end event; beyond this the oldest are dropped


class LaunchTimer(Protocol):
    """Brackets one launch. `elapsed_us` returns None until the end mark has completed."""

    def start(self) -> Any: ...

    def stop(self, token: Any) -> None: ...

    def elapsed_us(self, token: Any) -> float | None: ...

    def release(self, token: Any) -> None: ...


class CudaEventTimer:
    """CUDA events on torch's current stream, pooled so timing a launch allocates nothing."""

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(
                "unavailable: no GPU: CUDA event timing needs torch.cuda (use sample_fraction=0 "
                "to count launches without timing them)"
            )
        self._torch = torch
        self._pool: list[tuple[Any, Any]] = []

    def start(self) -> Any:
        pair = (
            self._pool.pop()
            if self._pool
            else (self._torch.cuda.Event(enable_timing=True), self._torch.cuda.Event(enable_timing=True))
        )
        pair[0].record()
        return pair

    def stop(self, token: Any) -> None:
        token[1].record()

    def elapsed_us(self, token: Any) -> float | None:
        if not token[1].query():
            return None
        return float(token[0].elapsed_time(token[1])) * 1000.0

    def release(self, token: Any) -> None:
        self._pool.append(token)


class WallClockTimer:
    """Host wall time of a launch: the run time of an interpreted launch (TRITON_INTERPRET=1 runs the
    kernel in the calling thread). Wrong for a GPU launch, which returns before the kernel ends."""

    def start(self) -> Any:
        return [time.perf_counter(), None]

    def stop(self, token: Any) -> None:
        token[1] = time.perf_counter()

    def elapsed_us(self, token: Any) -> float | None:
        return None if token[1] is None else (token[1] - token[0]) * 1e6

    def release(self, token: Any) -> None:
        pass


class _EntryMeta:
    """What a launch hook gets, for a launch seen at the interpreter's entry (just the kernel name)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def get(self) -> dict[str, Any]:
        return {"name": self.name}


@dataclass
class _Agg:
    launches: int
    t_first: float
    t_last: float
    durations_us: list[float] = field(default_factory=list)


_Key = tuple[str, tuple[int, ...], tuple[tuple[str, Scalar], ...]]


def _scalar(v: Any) -> Scalar:
    return v if isinstance(v, (bool, int, float, str)) else str(v)


def grid3(grid: Sequence[int]) -> tuple[int, ...]:
    """A launch grid as the 3-D (x, y, z) the GPU runs, missing dimensions 1: (1024,) -> (1024, 1, 1).

    Never raises: it runs inside a launch hook, and a grid Triton itself rejects is left as given."""
    g = tuple(int(x) for x in grid)
    return g + (1,) * (3 - len(g)) if len(g) <= 3 else g


def capture_launch_metadata(
    constexpr_names: Sequence[str], chained: Callable[..., dict[str, Any]] | None = None
) -> Callable[..., dict[str, Any]]:
    """The `launch_metadata` callable instrument() installs: grid, launch options and constexpr values."""

    def launch_metadata(grid: Sequence[int], metadata: Any, args: dict[str, Any]) -> dict[str, Any]:
        out = dict(chained(grid, metadata, args)) if chained is not None else {}
        config: dict[str, Scalar] = {
            "num_warps": metadata.num_warps,
            "num_stages": metadata.num_stages,
            "num_ctas": metadata.num_ctas,
        }
        for name in constexpr_names:
            if name in args:
                config[name] = _scalar(args[name])
        # One normal form, 3-D: Triton hands over the grid as the user wrote it ((1024,) or (4, 1, 1)),
        # and launches it padded with 1s (JITFunction.run: grid_1 = grid[1] if len(grid) > 1 else 1).
        out[_GRID] = grid3(grid)
        out[_CONFIG] = tuple(config.items())
        return out

    launch_metadata.kpilot = True  # type: ignore[attr-defined]
    return launch_metadata


class LaunchTelemetry:
    """Counts and samples Triton launches in this process. Thread-safe; one instance per process."""

    def __init__(
        self,
        sample_fraction: float = 1 / 16,
        *,
        timer: LaunchTimer | None = None,
        clock: Callable[[], float] = time.time,
        gpu: str = "",
    ) -> None:
        if not 0.0 <= sample_fraction <= 1.0:
            raise ValueError(f"sample_fraction is a fraction of launches in [0, 1], got {sample_fraction}")
        # Every k-th launch per kernel, deterministic (k = round(1/f)), so short runs still get timings.
        self.every = 0 if sample_fraction == 0 else max(1, round(1 / sample_fraction))
        self._timer = timer
        self.clock = clock
        self.gpu = gpu  # the GPU UUID this process launches on, when the workload knows it
        self._lock = threading.Lock()
        self._aggs: dict[_Key, _Agg] = {}
        self._counts: dict[str, int] = {}
        self._pending: list[tuple[_Key, Any]] = []
        self._open: dict[int, list[tuple[_Key, Any] | None]] = {}  # per thread: enter -> exit pairing
        self.dropped = 0  # timed launches given up on (more than MAX_PENDING unfinished)
        self.errors = 0  # hook calls that raised; counted, never propagated into the launch
        self.installed = False
        self._interp_run: Any = None  # InterpretedFunction.run before install() wrapped it

    # -------------------------------------------------------- set-up

    def instrument(self, *kernels: Any) -> None:
        """Capture grid and config for these JITFunctions (an @triton.autotune kernel: pass it, its `.fn`
        is instrumented). A kernel's own `launch_metadata` keeps working: ours chains to it."""
        for k in kernels:
            fn = k
            while not hasattr(fn, "params") and hasattr(
                fn, "fn"
            ):  # Autotuner / Heuristics wrap a JITFunction
                fn = fn.fn
            if not hasattr(fn, "params") or not hasattr(fn, "launch_metadata"):
                raise TypeError(f"instrument() takes @triton.jit kernels, got {type(k).__name__}")
            if getattr(fn.launch_metadata, "kpilot", False):
                continue
            names = [p.name for p in fn.params if p.is_constexpr]
            fn.launch_metadata = capture_launch_metadata(names, fn.launch_metadata)

    def install(self) -> None:
        from triton import knobs

        if self.every and self._timer is None:
            self._timer = CudaEventTimer()
        knobs.runtime.launch_enter_hook.add(self.on_enter)
        knobs.runtime.launch_exit_hook.add(self.on_exit)
        if knobs.runtime.interpret:
            self._wrap_interpreter()
        self.installed = True

    def _wrap_interpreter(self) -> None:
        from triton.runtime.interpreter import InterpretedFunction

        orig = self._interp_run = InterpretedFunction.run
        tel = self

        def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if warmup:
                return orig(fn, *args, grid=grid, warmup=warmup, **kwargs)
            meta = _EntryMeta(fn.fn.__name__)
            tel.on_enter(meta)
            try:
                return orig(fn, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                tel.on_exit(meta)

        InterpretedFunction.run = run  # type: ignore[method-assign]

    def uninstall(self) -> None:
        from triton import knobs

        knobs.runtime.launch_enter_hook.remove(self.on_enter)
        knobs.runtime.launch_exit_hook.remove(self.on_exit)
        if self._interp_run is not None:
            from triton.runtime.interpreter import InterpretedFunction

            InterpretedFunction.run = self._interp_run  # type: ignore[method-assign]
            self._interp_run = None
        self.installed = False

    def __enter__(self) -> Self:
        self.install()
        return self

    def __exit__(self, *exc: object) -> None:
        self.uninstall()

    # -------------------------------------------------------- the hooks (hot path)

    def on_enter(self, metadata: Any) -> None:
        try:
            self._enter(metadata)
        except Exception:  # noqa: BLE001 - telemetry must never break the workload's launch
            self.errors += 1

    def on_exit(self, metadata: Any) -> None:
        try:
            self._exit()
        except Exception:  # noqa: BLE001 - as above
            self.errors += 1

    def _enter(self, metadata: Any) -> None:
        data = metadata.get()
        key: _Key = (data["name"], data.get(_GRID, ()), data.get(_CONFIG, ()))
        now = self.clock()
        token = None
        with self._lock:
            n = self._counts.get(key[0], 0)
            self._counts[key[0]] = n + 1
            agg = self._aggs.get(key)
            if agg is None:
                self._aggs[key] = _Agg(1, now, now)
            else:
                agg.launches += 1
                agg.t_last = now
            timed = self.every and n % self.every == 0
        if timed and self._timer is not None:
            token = self._timer.start()
        self._open.setdefault(threading.get_ident(), []).append((key, token) if token is not None else None)

    def _exit(self) -> None:
        stack = self._open.get(threading.get_ident())
        if not stack:
            return
        item = stack.pop()
        if item is None or self._timer is None:
            return
        self._timer.stop(item[1])
        with self._lock:
            self._pending.append(item)
            if len(self._pending) > MAX_PENDING:
                _, old = self._pending.pop(0)
                self._timer.release(old)
                self.dropped += 1

    # -------------------------------------------------------- collection

    def _collect(self) -> None:
        if self._timer is None:
            return
        still: list[tuple[_Key, Any]] = []
        for key, token in self._pending:
            us = self._timer.elapsed_us(token)
            if us is None:
                still.append((key, token))
                continue
            self._timer.release(token)
            agg = self._aggs.get(key)
            if agg is None:  # counted in an earlier drain, finished now: report with zero new launches
                agg = self._aggs[key] = _Agg(0, self.clock(), self.clock())
            agg.durations_us.append(us)
        self._pending = still

    def drain(self) -> list[LaunchRecord]:
        """Everything recorded since the last drain, one record per (kernel, grid, config)."""
        with self._lock:
            self._collect()
            aggs, self._aggs = self._aggs, {}
        return [
            LaunchRecord(
                kernel=k[0],
                gpu=self.gpu,
                grid=list(k[1]),
                config=dict(k[2]),
                launches=a.launches,
                t_first=a.t_first,
                t_last=a.t_last,
                durations_us=a.durations_us,
            )
            for k, a in aggs.items()
        ]


def kernel_shares(records: Iterable[LaunchRecord]) -> list[KernelShare]:
    """Per-kernel share of timed GPU time, largest first.

    A kernel's time is estimated as launches x mean sampled duration; its share is that over the sum for
    all kernels with at least one timed launch. Kernels never timed are left out (no duration is guessed).
    `config` is the launch config that took most of the kernel's time (which version ran).
    """
    launches: dict[str, int] = {}
    durations: dict[str, list[float]] = {}
    by_config: dict[str, dict[str, tuple[float, dict]]] = {}  # kernel -> config key -> (time, config)
    for r in records:
        launches[r.kernel] = launches.get(r.kernel, 0) + r.launches
        durations.setdefault(r.kernel, []).extend(r.durations_us)
        if r.durations_us:
            key = repr(sorted(r.config.items()))
            t, _ = by_config.setdefault(r.kernel, {}).get(key, (0.0, r.config))
            by_config[r.kernel][key] = (t + r.launches * sum(r.durations_us) / len(r.durations_us), r.config)
    est = {k: launches[k] * (sum(d) / len(d)) for k, d in durations.items() if d}
    total = sum(est.values())
    out = [
        KernelShare(k, t / total if total > 0 else 0.0, launches[k], sum(durations[k]) / len(durations[k]),
                    config=dict(max(by_config[k].values(), key=lambda tc: tc[0])[1]))
        for k, t in est.items()
    ]
    return sorted(out, key=lambda s: (-s.share, s.kernel))

"""Runs inside the captured program: records every Triton kernel launch, writes DIR/raw/capture.json at exit.

Installed by the `sitecustomize.py` that `kpilot capture` puts first on PYTHONPATH (the program is not
edited). Triton's launch hooks (knobs.runtime.launch_enter_hook) do not fire under TRITON_INTERPRET=1, so
the hook wraps the JIT entry instead: `JITFunction.run` (compiled) and `InterpretedFunction.run`
(interpreter), which every `kernel[grid](...)`, `@triton.autotune` and `@triton.heuristics` launch
reaches. `Autotuner.run` is wrapped too, to keep its config list; its benchmark launches are not counted.
Under the interpreter there is no GPU to time an autotuner's configs on (Triton's `do_bench` and its disk
cache key both ask the GPU driver and raise "0 active drivers"), so every config ties and the first is used;
float scalars and libdevice calls run as compiled Triton runs them (shared/triton_interpreter.py).

Per kernel and argument signature (a "variant") it keeps: the first launch's arguments (tensor
shape/stride/dtype/device, scalars, constexprs), launch options, the evaluated grid, which tensors the
launch wrote (compared with a copy taken before the first launch; a float tensor left bit-identical is
probed by one more launch on copies, see _written_on_probe), the values of integer tensors and
small tensors (saved as .pt, size-limited), call counts, elements moved and GPU time from CUDA events
(the first launch of a variant is not timed: it includes the compile).
"""

from __future__ import annotations

import atexit
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from services.kpilot.capture.records import ArgSpec, Capture, KernelRecord, Variant

SNAPSHOT_BYTES = 512 << 20  # copies taken before a variant's first launch (to see what it writes)
SAVE_INT_ELEMENTS = 1 << 16  # integer/bool tensors up to this size are saved (their values matter)
SAVE_SMALL_ELEMENTS = 4096  # any tensor up to this size is saved
FOLD_EVENTS = 512  # pending CUDA event pairs per variant before they are summed


class _Variant:
    def __init__(self, spec: Variant) -> None:
        self.spec = spec
        self.events: list[tuple[Any, Any]] = []
        self.timed = 0
        self.timed_ms = 0.0

    def fold(self) -> None:
        if self.events:
            self.events[-1][1].synchronize()
            self.timed_ms += sum(a.elapsed_time(b) for a, b in self.events)
            self.timed += len(self.events)
            self.events = []


class _Kernel:
    def __init__(self, kernel: Any, record: KernelRecord) -> None:
        self.kernel = kernel
        self.record = record
        self.variants: dict[tuple, _Variant] = {}


class _State(threading.local):
    busy = False
    bench = False


_STATE = _State()
_KERNELS: dict[int, _Kernel] = {}
_OUT: list[Path] = []
_COMMAND: list[str] = []
# Called with (kernel name, calls of the variant so far) after each recorded launch has returned: the live
# path (services/telemetry/sdk_capture.py) waits on it instead of polling for the kernel it was asked for.
_LISTENERS: list[Callable[[str, int], None]] = []


def add_listener(fn: Callable[[str, int], None]) -> None:
    _LISTENERS.append(fn)


def remove_listener(fn: Callable[[str, int], None]) -> None:
    if fn in _LISTENERS:
        _LISTENERS.remove(fn)


LISTENER_ERRORS = [0]  # listener calls that raised: counted, never propagated into the launch


def _notify(name: str, calls: int) -> None:
    for fn in _LISTENERS[:]:  # a copy: a listener may remove itself
        try:
            fn(name, calls)
        except Exception:  # noqa: BLE001 - a listener must never break the workload's launch
            LISTENER_ERRORS[0] += 1


def _is_constexpr(annotation: Any) -> bool:
    import triton.language as tl

    if annotation is tl.constexpr:
        return True
    return isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr"


def _kernel_state(kernel: Any) -> _Kernel:
    fn = kernel.fn
    st = _KERNELS.get(id(fn))
    if st is None:
        from services.kpilot.capture.records import KernelSource

        params = list(inspect.signature(fn).parameters.values())
        rec = KernelRecord(
            name=fn.__name__,
            file=inspect.getsourcefile(fn) or "",
            line=fn.__code__.co_firstlineno,
            params=[p.name for p in params],
            constexprs=[p.name for p in params if _is_constexpr(p.annotation)],
            source=KernelSource(name=fn.__name__, functions=[], preamble=[]),
        )
        st = _KERNELS[id(fn)] = _Kernel(kernel, rec)
    return st


def _scalar(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _arg_specs(rec: KernelRecord, arguments: dict[str, Any]) -> list[ArgSpec]:
    import torch

    out = []
    seen: dict[tuple, str] = {}
    for name in rec.params:
        v = arguments.get(name)
        if name in rec.constexprs:
            out.append(ArgSpec(name=name, kind="constexpr", value=_scalar(v)))
        elif isinstance(v, torch.Tensor):
            out.append(
                ArgSpec(
                    name=name,
                    kind="tensor",
                    shape=list(v.shape),
                    stride=list(v.stride()),
                    dtype=str(v.dtype).removeprefix("torch."),
                    device=str(v.device),
                )
            )
            ident = (v.data_ptr(), tuple(v.shape), v.stride(), v.dtype)
            if ident in seen:
                out[-1].alias_of = seen[ident]
            else:
                seen[ident] = name
        else:
            out.append(ArgSpec(name=name, kind="scalar", value=_scalar(v)))
    return out


def _variant_key(specs: list[ArgSpec], options: dict[str, int]) -> tuple:
    return tuple(
        (s.name, tuple(s.shape), tuple(s.stride), s.dtype, s.device)
        if s.kind == "tensor"
        else (s.name, s.value if s.kind == "constexpr" else type(s.value).__name__)
        for s in specs
    ) + tuple(sorted(options.items()))


def _grid(grid: Any, meta: dict[str, Any]) -> list[int]:
    g = grid(meta) if callable(grid) else grid
    g = tuple(g) if isinstance(g, (tuple, list)) else (g,)
    return [int(x) for x in g] + [1] * (3 - len(g))


def _same(a: Any, b: Any) -> bool:
    import torch

    if not (a.is_floating_point() or a.is_complex()):
        return bool(torch.equal(a, b))
    return bool(torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))


def _written_on_probe(name: str, tensors: dict[str, Any], before: dict[str, Any], launch_with: Any) -> bool:
    """Whether the kernel writes float tensor `name`, when the real launch left it bit-identical: the
    program may hand it a buffer that already holds the result (a freed output reused by the allocator, the
    same call repeated in a loop), so the launch is run once more on copies of every tensor, `name`'s filled
    with random values: a tensor the kernel only reads keeps them, one it writes (or updates) does not."""
    import torch

    if any(n not in before or before[n].stride() != t.stride() for n, t in tensors.items()):
        return False  # a copy with another layout (overlapping strides) would mislead the kernel: no probe
    subs = {id(t): before[n].clone() for n, t in tensors.items()}
    probe = subs[id(tensors[name])]
    probe.copy_(torch.randn(probe.shape, dtype=torch.float32, device=probe.device).to(probe.dtype))
    seed = probe.clone()
    launch_with(subs)
    return not _same(seed, probe)


def _first_launch(st: _Kernel, var: Variant, arguments: dict[str, Any], launch: Any, launch_with: Any) -> Any:
    """Runs the first launch of a variant with copies of its tensors around it."""
    import torch

    tensors = {s.name: arguments[s.name] for s in var.args if s.kind == "tensor"}
    before: dict[str, torch.Tensor] = {}
    budget = SNAPSHOT_BYTES
    for name, t in tensors.items():
        nbytes = t.numel() * t.element_size()
        if nbytes <= budget:
            before[name] = t.detach().clone()
            budget -= nbytes
    result = launch()
    out_dir = _OUT[0] / "raw"
    out_dir.mkdir(parents=True, exist_ok=True)
    for s in var.args:
        if s.kind != "tensor":
            continue
        t, pre = tensors[s.name], before.get(s.name)
        if pre is not None:
            s.written = not _same(pre, t)
            if not s.written and not s.alias_of and t.is_floating_point() and t.numel():
                s.written = _written_on_probe(s.name, tensors, before, launch_with)
        integer = not (t.is_floating_point() or t.is_complex())
        small = not s.written and t.numel() <= SAVE_SMALL_ELEMENTS  # an output's old values do not matter
        if pre is not None and (small or (integer and t.numel() <= SAVE_INT_ELEMENTS)):
            s.saved = f"{st.record.name}.v{len(st.variants)}.{s.name}.pt"
            torch.save(pre.cpu(), out_dir / s.saved)
        elif integer and t.numel():
            s.int_range = [int(t.min()), int(t.max())]
    return result


def _launch(kernel: Any, orig: Any, args: tuple, grid: Any, kwargs: dict[str, Any]) -> Any:
    import torch
    import triton

    st = _kernel_state(kernel)
    rec = st.record
    sig = inspect.signature(kernel.fn)
    bound = sig.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    options = {k: int(kwargs[k]) for k in ("num_warps", "num_stages") if isinstance(kwargs.get(k), int)}
    options.setdefault("num_warps", 4)
    options.setdefault("num_stages", 3)  # Triton's CUDA defaults when the launch passes none
    specs = _arg_specs(rec, arguments)
    key = _variant_key(specs, options)
    tensors = [v for v in arguments.values() if isinstance(v, torch.Tensor)]

    def launch() -> Any:
        return orig(kernel, *args, grid=grid, warmup=False, **kwargs)

    def launch_with(subs: dict[int, Any]) -> Any:  # the same launch on other tensors (by identity)
        a = tuple(subs.get(id(v), v) for v in args)
        kw = {k: subs.get(id(v), v) for k, v in kwargs.items()}
        return orig(kernel, *a, grid=grid, warmup=False, **kw)

    var = st.variants.get(key)
    if var is None:
        spec = Variant(
            args=specs,
            options=options,
            grid=_grid(grid, {**arguments, **kwargs}),
            elements=sum(t.numel() for t in tensors),
        )
        st.variants[key] = _Variant(spec)
        result = _first_launch(st, spec, arguments, launch, launch_with)
        spec.calls = 1
        _notify(rec.name, 1)
        return result
    var.spec.calls += 1
    timed = not triton.knobs.runtime.interpret and tensors and tensors[0].is_cuda
    if not timed:
        result = launch()
        _notify(rec.name, var.spec.calls)
        return result
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    result = launch()
    end.record()
    var.events.append((start, end))
    if len(var.events) >= FOLD_EVENTS:
        var.fold()
    _notify(rec.name, var.spec.calls)
    return result


_ORIGINALS: list[tuple[type, str, Any]] = []  # (class, attribute, original) for uninstall()


def _wrap_run(cls: type) -> None:
    orig = cls.run
    _ORIGINALS.append((cls, "run", orig))

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if warmup or _STATE.busy or _STATE.bench:
            return orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        _STATE.busy = True
        try:
            return _launch(self, orig, args, grid, kwargs)
        finally:
            _STATE.busy = False

    cls.run = run


def _wrap_autotuner() -> None:
    import triton
    from triton.runtime.autotuner import Autotuner

    from services.kpilot.capture.source import is_kernel

    orig_run, orig_bench, orig_cache = Autotuner.run, Autotuner._bench, Autotuner.check_disk_cache
    _ORIGINALS.extend([(Autotuner, "run", orig_run), (Autotuner, "_bench", orig_bench),
                       (Autotuner, "check_disk_cache", orig_cache)])

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        base = self.fn
        while not is_kernel(base) and hasattr(base, "fn"):
            base = base.fn
        if is_kernel(base) and not _kernel_state(base).record.autotune_configs:
            _kernel_state(base).record.autotune_configs = [
                {k: v for k, v in c.all_kwargs().items() if isinstance(v, (bool, int, float, str))}
                for c in self.configs
            ]
        return orig_run(self, *args, **kwargs)

    def bench(self: Any, *args: Any, **kwargs: Any) -> Any:
        if triton.knobs.runtime.interpret:
            return [1.0, 1.0, 1.0]  # nothing to time on CPU: every config ties, the first one wins
        _STATE.bench = True
        try:
            return orig_bench(self, *args, **kwargs)
        finally:
            _STATE.bench = False

    def check_disk_cache(self: Any, tuning_key: Any, configs: Any, bench_fn: Any) -> bool:
        if triton.knobs.runtime.interpret:  # its cache key asks the (absent) GPU driver for its target
            bench_fn()
            return False
        return orig_cache(self, tuning_key, configs, bench_fn)

    Autotuner.run, Autotuner._bench, Autotuner.check_disk_cache = run, bench, check_disk_cache


def dump() -> Path:
    """Writes DIR/raw/capture.json (kernel sources are collected now, from the live functions)."""
    import msgspec
    import triton

    from services.kpilot.capture.source import collect

    gpu = False
    kernels = []
    for st in list(_KERNELS.values()):  # a copy: the program may still launch in another thread
        try:
            st.record.source = collect(st.kernel)
        except (OSError, TypeError, StopIteration, SyntaxError) as e:
            st.record.source.problems.append(f"source not found: {e}")
        st.record.variants = []
        for v in list(st.variants.values()):
            v.fold()
            if v.timed:
                gpu = True
                v.spec.gpu_ms = v.timed_ms / v.timed * v.spec.calls
            st.record.variants.append(v.spec)
        kernels.append(st.record)
    timing = "cuda events" if gpu else (
        "not measured: Triton interpreter" if triton.knobs.runtime.interpret else "not measured: no GPU"
    )
    cap = Capture(command=_COMMAND, timing=timing, kernels=kernels)
    path = _OUT[0] / "raw" / "capture.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.encode(cap))
    return path


def install(out_dir: str, command: list[str], *, at_exit: bool = True) -> None:
    """Wraps Triton's JIT entries; the record is written when the program exits (`at_exit`), or by `dump()`
    for an in-process capture (then `uninstall()` puts Triton back)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if _ORIGINALS:
        raise RuntimeError("the capture hook is already installed; call uninstall() first")
    _OUT[:] = [Path(out_dir)]
    _COMMAND[:] = command
    _KERNELS.clear()
    from shared.triton_interpreter import float_scalars_as_fp32

    float_scalars_as_fp32()  # the program's kernels see float arguments as they would on the GPU
    _wrap_run(JITFunction)
    _wrap_run(InterpretedFunction)
    _wrap_autotuner()
    if at_exit:
        atexit.register(dump)


def installed() -> bool:
    """Whether the hook is in place (one capture at a time per process)."""
    return bool(_ORIGINALS)


def uninstall() -> None:
    while _ORIGINALS:
        cls, attr, orig = _ORIGINALS.pop()
        setattr(cls, attr, orig)


@contextmanager
def session(out_dir: str | Path, top: int = 1, min_share: float = 0.0) -> Iterator[list[Any]]:
    """In-process capture (what a workload's SDK would run when asked for a hot kernel's task): launches
    inside the block are recorded; on exit the tasks are written and the yielded list holds the report."""
    from services.kpilot.capture.taskgen import write_tasks

    out = Path(out_dir)
    report: list[Any] = []
    install(str(out), ["in-process"], at_exit=False)
    try:
        yield report
    finally:
        try:
            raw = dump()
        finally:
            uninstall()
        report.append(write_tasks(raw, out, top, min_share))

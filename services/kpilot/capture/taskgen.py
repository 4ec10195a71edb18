"""Captured launches -> one task file per hot kernel (examples/README.md) and DIR/capture.json.

The task carries the kernel's source verbatim (decorators replaced by `@triton.jit`: the tuner is ours),
its jit helpers and the globals they use; `CONFIG` is the observed constexprs and launch options, `SPACE`
powers of two around each observed block size where a smaller block still covers the data (`_space`),
any `@triton.autotune` config values and the launch options; `TOLERANCE` a few ulps of each dtype;
`make_inputs` re-creates the arguments from their captured metadata (random values of the right
shape/dtype/strides) or loads the values saved from the real call; the grid is the captured one, each
dimension that equals cdiv(size, BLOCK) for a size argument and a block constexpr written as that formula
so it follows the tuned block; `reference` runs a frozen copy of the original kernel (renamed `_ref_*`, so
a patch of the kernel cannot change it) at the captured config. The captured sizes are fixed, so every
entry of `SHAPES` is the captured call.
"""

from __future__ import annotations

import ast
import base64
import re
from pathlib import Path

import msgspec

from services.kpilot.capture.reads import read_params
from services.kpilot.capture.records import Capture, KernelRecord, Variant

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
# [atol, rtol] per dtype. The reference is the same kernel at the captured config, and a config change may
# reorder a reduction legitimately: that moves a half-precision output by a few units in the last place
# (H200 run r46: liger's fp16 rms_norm at another num_warps, 1 element of 16.7M off by 0.0039, one or two
# fp16 ulps at magnitudes 2-8, refused under [1e-3, 1e-3]). So 2 ulps absolute and 4 ulps relative of
# each dtype's epsilon (fp16 2^-10, bf16 2^-7); fp32 keeps [1e-5, 1e-5] as before.
TOLERANCE = {"float32": [1e-5, 1e-5], "float16": [2e-3, 4e-3], "bfloat16": [1.6e-2, 3.2e-2]}


class CapturedTask(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kernel: str
    origin: str  # file:line of the @triton.jit def
    calls: int
    share: float  # of GPU time, or of calls * elements when not measured
    share_of: str  # "gpu time" | "calls * elements"
    gpu_ms: float | None
    task: str  # path of the written task, "" when none was written
    problems: list[str] = []


class CaptureReport(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    command: list[str]
    timing: str
    kernels: list[CapturedTask]


def _weight(v: Variant, measured: bool) -> float:
    return (v.gpu_ms or 0.0) if measured else float(v.calls * v.elements)


def _hottest_variant(rec: KernelRecord, measured: bool) -> Variant:
    return max(rec.variants, key=lambda v: _weight(v, measured))


def _pow2(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0 and v & (v - 1) == 0


def _space(rec: KernelRecord, var: Variant, config: dict) -> dict[str, list]:
    """Launch options over their usual values; a block size over powers of two around the observed one,
    smaller ones only where a smaller block still covers the data: the grid follows it (`_grid_terms`) or
    the kernel loops over it (`_loop_steps`). Otherwise the block spans a whole row per program, as the
    host code sized it (liger's rms_norm: BLOCK_SIZE = next_power_of_2(n_cols) with one program per row);
    a smaller one would drop the rest of the row (H200 run r46), and one equal to a captured tensor
    dimension is that size itself (fla's `D`) and stays. `@triton.autotune` values are always kept."""
    space: dict[str, list] = {}
    tuned = {k: {c[k] for c in rec.autotune_configs if k in c} for k in config}
    may_shrink = {hit for _, hit, _ in _grid_terms(var, config) if hit} | _loop_steps(rec)
    dims = {n for s in var.args if s.kind == "tensor" for n in s.shape}
    for k, v in config.items():
        if k in ("num_warps", "num_stages"):
            base = [1, 2, 4, 8, 16] if k == "num_warps" else [1, 2, 3, 4]
            space[k] = sorted({*base, v, *tuned[k]})
        elif _pow2(v) and v >= 16:  # a block size
            autotuned = {t for t in tuned[k] if _pow2(t)}
            if k in may_shrink:
                around = {*(v << s for s in range(3)), *(v >> s for s in range(1, 3) if v >> s >= 16)}
            else:
                around = {v} if v in dims else {v, v << 1}
            space[k] = sorted(around | autotuned)
        else:
            space[k] = [v]
    return space


def _loop_steps(rec: KernelRecord) -> set[str]:
    """Names a kernel loops by: the step of a `range`/`tl.range`/`tl.static_range`, or the divisor of a
    `cdiv` (a trip count). A smaller block there means more trips, not fewer elements."""
    names: set[str] = set()
    for _, text in rec.source.functions:
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call):
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee in ("range", "static_range") and len(node.args) >= 3:
                names |= {n.id for n in ast.walk(node.args[2]) if isinstance(n, ast.Name)}
            elif callee == "cdiv" and len(node.args) == 2:
                names |= {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
    return names


def _grid_terms(var: Variant, config: dict) -> list[tuple[int, str, str]]:
    """Per grid dimension: its captured size, and the block constexpr and size argument it equals
    cdiv(size, block) of ("" and "" when none does)."""
    sizes = [s for s in var.args if s.kind == "scalar" and isinstance(s.value, int)
             and not isinstance(s.value, bool)]
    blocks = [k for k, v in config.items() if k not in ("num_warps", "num_stages") and _pow2(v)]
    terms = []
    for g in var.grid:
        term = (g, "", "")
        for s in sizes:
            hit = next((b for b in blocks if g > 1 and -(-s.value // config[b]) == g), None)
            if hit:
                term = (g, hit, s.name)
                break
        terms.append(term)
    return terms


def _grid_code(var: Variant, config: dict) -> str:
    sizes = {s.name: s.value for s in var.args if s.kind == "scalar"}
    dims = [f"triton.cdiv({sizes[size]}, config[{hit!r}])" if hit else str(g)
            for g, hit, size in _grid_terms(var, config)]
    return "(\n        " + ",\n        ".join(dims) + ",\n    )"


def _ref_copy(rec: KernelRecord) -> str:
    names = {n for n, _ in rec.source.functions}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:
            if node.id in names:
                node.id = f"_ref_{node.id}"
            return node

    out = []
    for name, text in rec.source.functions:
        tree = Rename().visit(ast.parse(text))
        fn = tree.body[0]
        assert isinstance(fn, ast.FunctionDef)
        fn.name = f"_ref_{name}"
        out.append("@triton.jit\n" + ast.unparse(fn) + "\n")
    return "\n\n".join(out)


def _moved(tensors: list, reads: set[str] | None) -> tuple[int, str]:
    """bytes_moved of the captured call and the line saying how: each distinct tensor's bytes once per
    direction, read when the kernel loads it (reads.py; an alias's load counts for its original), written
    when the launch changed it. Where the source could not be read (`reads` None), a written tensor is
    counted as written only: the bound then errs low, which never refuses an honest candidate."""
    total, parts = 0, []
    for s in (t for t in tensors if not t.alias_of):
        names = {s.name} | {t.name for t in tensors if t.alias_of == s.name}
        read = (not s.written) if reads is None else bool(names & reads)
        ways = [w for w, on in (("read", read), ("written", s.written)) if on]
        total += _nbytes(s) * len(ways)
        parts.append(f"{s.name} {'+'.join(ways) or 'not counted'}")
    how = "source not read: written tensors counted once" if reads is None else "from the kernel's loads"
    return total, f"{', '.join(parts)} ({how})"


def _runtime(var: Variant, dtype: str, saved: dict[str, str], reads: set[str] | None) -> str:
    tensors = [s for s in var.args if s.kind == "tensor"]
    moved, moved_how = _moved(tensors, reads)
    specs = [
        {"name": s.name, "shape": s.shape, "stride": s.stride, "dtype": s.dtype, "saved": s.saved,
         "int_range": s.int_range, "alias_of": s.alias_of}
        for s in tensors
    ]
    written = [i for i, s in enumerate(tensors) if s.written and not s.alias_of]
    params = [[s.name, s.kind, s.value] for s in var.args]
    return f'''
# The captured arguments, in the kernel's parameter order.
_TENSORS = {specs!r}
_PARAMS = {params!r}
_WRITTEN = {written!r}  # tensors the captured launch wrote: its outputs, written in place
INPLACE = {tuple(written)!r}  # so the tools restore them between runs (examples/README.md, "In-place outputs")
# Values saved from the real call (torch.save, base64): the task is one file, as the sandbox binds only it.
_SAVED = {saved!r}


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    twin = shape.get("dtype")
    out = []
    names = [a["name"] for a in _TENSORS]
    for a in _TENSORS:
        if a["alias_of"]:  # the captured call passed the same tensor twice
            out.append(out[names.index(a["alias_of"])])
            continue
        dtype = getattr(torch, twin if twin and a["dtype"] == DTYPE else a["dtype"])
        extent = 1 + sum((n - 1) * s for n, s in zip(a["shape"], a["stride"]) if n > 0)
        if any(n == 0 for n in a["shape"]):
            extent = 0
        if a["saved"]:
            vals = torch.load(io.BytesIO(base64.b64decode(_SAVED[a["saved"]]))).to(dtype)
            t = torch.empty_strided(a["shape"], a["stride"], dtype=dtype, device=device)
            out.append(t.copy_(vals.to(device)) if device != "meta" else t)
            continue
        if dtype.is_floating_point:
            base = torch.randn(extent, device=device, dtype=dtype)
        elif dtype == torch.bool:
            base = torch.randint(0, 2, (extent,), device=device).bool()
        else:
            lo, hi = a["int_range"] or [0, 1]
            base = torch.randint(lo, hi + 1, (extent,), device=device, dtype=dtype)
        out.append(base.as_strided(a["shape"], a["stride"]))
    return tuple(out)


def _run(kernel, inputs, config, clone):
    ins, clones = list(inputs), {{}}
    for i, t in enumerate(inputs):  # clone: written tensors (and their aliases) are cloned once each
        if clone and (i in _WRITTEN or any(inputs[j] is t for j in _WRITTEN)):  # aliases of the originals
            ins[i] = clones.setdefault(id(t), t.clone())
    it = iter(ins)
    args, meta = [], {{}}
    for name, kind, value in _PARAMS:
        if kind == "tensor":
            args.append(next(it))
        elif kind == "constexpr":
            meta[name] = config.get(name, value)
        else:
            args.append(value)
    kernel[grid(config)](*args, **meta, num_warps=config["num_warps"], num_stages=config["num_stages"])
    outs = tuple(ins[i] for i in _WRITTEN)
    return outs[0] if len(outs) == 1 else outs


def launch(inputs, **config):
    _run(KERNELS[0], inputs, config, clone=False)  # in place: the INPLACE inputs are the outputs


def reference(inputs):
    return _run(_REF, inputs, _CAPTURED, clone=True)  # the expected values of the INPLACE inputs


def flops(shape):
    return 0.0  # not known from a capture: no FLOP formula, so no compute roofline


def bytes_moved(shape):
    return float({moved})  # {moved_how}
'''


_SIZES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "int16": 2}


def _nbytes(s: object) -> int:
    n = 1
    for d in s.shape:  # type: ignore[attr-defined]
        n *= d
    return n * _SIZES.get(s.dtype, 1)  # type: ignore[attr-defined]


def write_task(rec: KernelRecord, var: Variant, task_path: Path, raw_dir: Path) -> list[str]:
    """Writes the task file (and its saved tensors next to it); returns the problems that block it."""
    problems = list(rec.source.problems)
    tensors = [s for s in var.args if s.kind == "tensor"]
    if not any(s.written for s in tensors):
        problems.append("the captured launch wrote no tensor argument (atomics only, or a copy too large)")
    if bad := [s.name for s in var.args if s.kind == "constexpr" and not isinstance(s.value, (int, bool, str))]:
        problems.append(f"constexprs {bad} are not ints/bools/strings")
    if problems:
        return problems
    config = {s.name: s.value for s in var.args if s.kind == "constexpr"} | var.options
    floats = [s.dtype for s in tensors if s.dtype in FLOAT_DTYPES]
    dtype = floats[0] if floats else "float32"
    saved = {s.saved: base64.b64encode((raw_dir / s.saved).read_bytes()).decode() for s in tensors if s.saved}
    kernel_src = "\n\n".join("@triton.jit\n" + text for _, text in rec.source.functions)
    shape = {"captured": 1}
    text = f'''"""Captured by `kpilot capture` from {rec.file}:{rec.line}: kernel {rec.name}.

{var.calls} call(s) of this argument signature were observed. The kernel and its jit helpers are copied
verbatim (decorators replaced by @triton.jit); the reference is a frozen copy of the original (`_ref_*`) at
the captured config. Sizes are fixed by the capture, so every shape below is the captured call.
"""

{chr(10).join(rec.source.preamble)}
import base64
import io


{kernel_src}

KERNELS = ({rec.name},)
CONFIG = {config!r}
_CAPTURED = {config!r}  # written out: the reference must not follow a candidate's CONFIG
SPACE = {_space(rec, var, config)!r}
SHAPES = {{"micro": {shape!r}, "full": {shape!r}, "edge": [{shape!r}]}}
DTYPE = {dtype!r}
CPU_DTYPE = {"float32" if dtype == "bfloat16" else dtype!r}
TOLERANCE = {TOLERANCE!r}
PRECISION = "exact"


def grid(config):
    return {_grid_code(var, config)}
{_runtime(var, dtype, saved, read_params(rec.source.functions, [s.name for s in tensors]))}

{_ref_copy(rec)}

_REF = _ref_{rec.name}
'''
    task_path.write_text(text)
    return []


def write_tasks(raw: Path, out: Path, top: int, min_share: float, only: str = "") -> CaptureReport:
    """Task files for the `top` hottest kernels at `min_share` or more; with `only`, for that kernel alone
    (the live path asks for one kernel by name, whatever else the program launched meanwhile)."""
    cap = msgspec.json.decode(raw.read_bytes(), type=Capture)
    measured = cap.timing == "cuda events"
    weights = {r.name + r.file: sum(_weight(v, measured) for v in r.variants) for r in cap.kernels}
    total = sum(weights.values()) or 1.0
    ranked = sorted(cap.kernels, key=lambda r: -weights[r.name + r.file])
    report = []
    for i, rec in enumerate(ranked):
        share = weights[rec.name + rec.file] / total
        task, problems = "", []
        if not rec.variants:
            problems = ["no launch of it completed (the program failed in it, or only autotuned it)"]
        elif (rec.name == only) if only else (i < top and share >= min_share):
            path = out / f"{re.sub(r'[^A-Za-z0-9_]', '_', rec.name)}_task.py"
            problems = write_task(rec, _hottest_variant(rec, measured), path, raw.parent)
            task = "" if problems else str(path)
        report.append(
            CapturedTask(
                kernel=rec.name,
                origin=f"{rec.file}:{rec.line}",
                calls=sum(v.calls for v in rec.variants),
                share=share,
                share_of="gpu time" if measured else "calls * elements",
                gpu_ms=sum(v.gpu_ms or 0.0 for v in rec.variants) if measured else None,
                task=task,
                problems=problems,
            )
        )
    rep = CaptureReport(command=cap.command, timing=cap.timing, kernels=report)
    (out / "capture.json").write_bytes(msgspec.json.format(msgspec.json.encode(rep)))
    return rep

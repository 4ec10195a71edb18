"""Check an imported task module part by part and describe it as a `TaskManifest`. Worker-side only.

Every problem names the part and shows the form it should take, and all problems are reported at once
(a user fixing a task should not discover them one run at a time). The expected forms below are the
single source for those messages; examples/README.md documents the same parts.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, get_args

from shared.constraint_table import evaluate
from shared.space_list import LIST_FORM, domains
from shared.space_list import problems as list_problems
from shared.tools.task import (
    ConstraintTable,
    Dtype,
    KernelInfo,
    Precision,
    ShapeCost,
    TaskManifest,
    TaskShapes,
    Tolerance,
)

DTYPES: tuple[str, ...] = get_args(Dtype)
PRECISIONS: tuple[str, ...] = get_args(Precision)
# Launch options Triton itself takes (JITFunction.run kwargs); every other CONFIG key is a constexpr.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "maxnreg", "num_ctas")

EXPECTED: dict[str, str] = {
    "KERNELS": "KERNELS = (my_kernel,)  # tuple of @triton.jit functions, the first is the primary",
    "CONFIG": 'CONFIG = {"BLOCK": 128, "num_warps": 4, "num_stages": 1}  # constexprs + launch options',
    "SPACE": 'SPACE = {"BLOCK": [128, 256, 512], "num_warps": [2, 4, 8]}  # CONFIG key -> allowed values; '
    'or a list of configs: ' + LIST_FORM,
    "constraint": "def constraint(config: dict, shape: dict) -> bool: ...  # optional",
    "SHAPES": 'SHAPES = {"micro": {"n": 1000}, "full": {"n": 1 << 24}, "edge": [{"n": 1}, {"n": 1000003}]}',
    "DTYPE": 'DTYPE = "float16"  # one of ' + ", ".join(DTYPES),
    "CPU_DTYPE": 'CPU_DTYPE = "float32"  # optional: dtype of the CPU-interpreter twin (bf16 tasks)',
    "TOLERANCE": 'TOLERANCE = {"float16": [1e-2, 1e-2]}  # dtype -> [atol, rtol]; cover DTYPE and CPU_DTYPE',
    "PRECISION": 'PRECISION = "exact"  # one of ' + ", ".join(PRECISIONS),
    "INPLACE": "INPLACE = (0,)  # optional: indices into make_inputs()'s tuple that launch() writes in place",
    "make_inputs": "def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor, ...]: ...",
    "launch": "def launch(inputs: tuple, **config) -> torch.Tensor | tuple: ...",
    "reference": "def reference(inputs: tuple) -> torch.Tensor | tuple: ...",
    "flops": "def flops(shape: dict) -> float: ...",
    "bytes_moved": "def bytes_moved(shape: dict) -> float: ...",
    "CUDA_SOURCE": 'CUDA_SOURCE = r"""extern "C" __global__ void my_kernel(...) {...}"""',
    "KERNEL_NAME": 'KERNEL_NAME = "my_kernel"  # the __global__ function in CUDA_SOURCE (extern "C")',
    "Model": "class Model(torch.nn.Module): ...  # KernelBench reference",
    "get_inputs": "def get_inputs() -> list[torch.Tensor]: ...",
    "get_init_inputs": "def get_init_inputs() -> list: ...",
    "ModelNew": "class ModelNew(torch.nn.Module): ...  # optional KernelBench candidate",
}
# (part, number of positional parameters it takes)
_FUNCTIONS = (("make_inputs", 3), ("launch", 1), ("reference", 1), ("flops", 1), ("bytes_moved", 1))
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _bad(part: str, why: str) -> str:
    return f"{part}: {why}; expected: {EXPECTED[part]}"


def _scalar(v: object) -> bool:
    return isinstance(v, (bool, int, float, str))


def _takes(fn: Callable[..., Any], n: int, kwargs: dict[str, Any] | None = None) -> bool:
    """True when `fn` accepts `n` positional arguments (and the keyword arguments `kwargs`)."""
    try:
        inspect.signature(fn).bind(*range(n), **(kwargs or {}))
    except TypeError:
        return False
    except ValueError:  # builtins without a signature: give them the benefit of the doubt
        return True
    return True


def _check_shape(shape: object) -> str | None:
    if not isinstance(shape, dict) or not shape:
        return f"a non-empty dict of name -> int, got {shape!r}"
    bad = [
        k for k, v in shape.items() if not isinstance(k, str) or not isinstance(v, int) or isinstance(v, bool)
    ]
    return f"values must be ints, bad keys {bad}" if bad else None


def _shapes(module: ModuleType, problems: list[str]) -> TaskShapes | None:
    s = getattr(module, "SHAPES", None)
    if not isinstance(s, dict):
        problems.append(_bad("SHAPES", "missing" if s is None else f"not a dict ({type(s).__name__})"))
        return None
    n0 = len(problems)
    for name in ("micro", "full"):
        if name not in s:
            problems.append(_bad("SHAPES", f'no "{name}" shape'))
        elif (why := _check_shape(s[name])) is not None:
            problems.append(_bad("SHAPES", f'"{name}": {why}'))
    edge = s.get("edge")
    if not isinstance(edge, (list, tuple)) or not edge:
        problems.append(
            _bad(
                "SHAPES",
                '"edge" must be a non-empty list of shapes (odd sizes the kernel was never tuned on)',
            )
        )
    else:
        for i, e in enumerate(edge):
            if (why := _check_shape(e)) is not None:
                problems.append(_bad("SHAPES", f'"edge"[{i}]: {why}'))
    if unknown := sorted(set(s) - {"micro", "full", "edge"}):
        problems.append(_bad("SHAPES", f"unknown keys {unknown}"))
    if len(problems) > n0:
        return None
    return TaskShapes(micro=dict(s["micro"]), full=dict(s["full"]), edge=[dict(e) for e in edge])


def _named_shapes(shapes: TaskShapes) -> list[tuple[str, dict[str, int]]]:
    return [("micro", shapes.micro), ("full", shapes.full)] + [
        (f"edge:{i}", e) for i, e in enumerate(shapes.edge)
    ]


def _constraint_shapes(shapes: TaskShapes) -> list[tuple[str, dict[str, int]]]:
    """The shapes constraint() is checked on, CONFIG and every SPACE config alike: micro and full."""
    return _named_shapes(shapes)[:2]


def _kernels(module: ModuleType, problems: list[str]) -> list[KernelInfo]:
    from triton.runtime.jit import JITFunction

    ks = getattr(module, "KERNELS", None)
    if not isinstance(ks, tuple) or not ks:
        problems.append(_bad("KERNELS", "missing" if ks is None else f"not a non-empty tuple, got {ks!r}"))
        return []
    out = []
    for i, k in enumerate(ks):
        if not isinstance(k, JITFunction):
            problems.append(
                _bad(
                    "KERNELS",
                    f"item {i} is {type(k).__name__}, not a @triton.jit function "
                    "(an @triton.autotune wrapper is not accepted: the tuner is ours)",
                )
            )
            continue
        params = [p.name for p in k.params]
        out.append(
            KernelInfo(
                name=k.__name__, params=params, constexprs=[p.name for p in k.params if p.is_constexpr]
            )
        )
    names = [k.name for k in out]
    if len(set(names)) != len(names):
        problems.append(_bad("KERNELS", f"kernel names repeat: {names}"))
    return out


def _config_space(
    module: ModuleType, kernels: list[KernelInfo], required: bool, problems: list[str]
) -> tuple[dict[str, Any], dict[str, list[Any]], list[dict[str, Any]]]:
    """CONFIG, SPACE as key -> values and, for a SPACE given as a list of configs, its entries."""
    config, space = getattr(module, "CONFIG", None), getattr(module, "SPACE", None)
    if config is None and space is None and not required:
        return {}, {}, []
    ok = True
    if not isinstance(config, dict) or not all(isinstance(k, str) and _scalar(v) for k, v in config.items()):
        problems.append(
            _bad("CONFIG", "missing" if config is None else "not a dict of name -> int/float/str/bool")
        )
        ok = False
    listed = isinstance(space, (list, tuple))
    if not listed and (not isinstance(space, dict) or not all(
        isinstance(k, str) and isinstance(v, (list, tuple)) and v and all(_scalar(x) for x in v)
        for k, v in space.items()
    )):
        problems.append(
            _bad(
                "SPACE",
                "missing" if space is None else "neither a dict of name -> non-empty list of "
                "int/float/str/bool nor a list of configs",
            )
        )
        ok = False
    if not ok:
        return {}, {}, []
    assert isinstance(config, dict)
    if listed:
        entries = list(space)  # type: ignore[arg-type]
        problems += [_bad("SPACE", why) for why in list_problems(config, entries)]
        space = domains([e for e in entries if isinstance(e, dict)])
    assert isinstance(space, dict)
    if kernels and kernels[0].params:  # Triton: constexpr keys must exist in some kernel
        constexprs = {c for k in kernels for c in k.constexprs}
        if unknown := sorted(set(config) - constexprs - set(LAUNCH_OPTIONS)):
            problems.append(
                _bad(
                    "CONFIG",
                    f"keys {unknown} are neither a tl.constexpr parameter of a kernel "
                    f"({sorted(constexprs)}) nor a launch option {list(LAUNCH_OPTIONS)}",
                )
            )
        for opt in ("num_warps", "num_stages"):
            if not isinstance(config.get(opt), int):
                problems.append(_bad("CONFIG", f'needs an int "{opt}"'))
        nw = config.get("num_warps")
        if isinstance(nw, int) and (nw < 1 or nw & (nw - 1)):
            problems.append(_bad("CONFIG", f"num_warps must be a power of two, got {nw}"))
    elif bad := [k for k in config if not _IDENT.match(k)]:  # CUDA: keys become -D<KEY>=<value>
        problems.append(_bad("CONFIG", f"keys {bad} are not C identifiers (they are passed as -DKEY=value)"))
    if listed:  # the list's own checks named unknown keys and a CONFIG missing from it
        listed_ok = [dict(e) for e in entries if isinstance(e, dict)]
        return dict(config), {k: list(v) for k, v in space.items()}, listed_ok
    if unknown := sorted(set(space) - set(config)):
        problems.append(_bad("SPACE", f"keys {unknown} are not in CONFIG"))
    for k, vs in space.items():
        if k in config and config[k] not in vs:
            problems.append(
                _bad("SPACE", f"CONFIG[{k!r}] = {config[k]!r} is not among the allowed {list(vs)}")
            )
    return dict(config), {k: list(v) for k, v in space.items()}, []


def _dtype_parts(module: ModuleType, problems: list[str]) -> tuple[str, str, dict[str, Tolerance], str]:
    dtype = getattr(module, "DTYPE", None)
    if dtype not in DTYPES:
        problems.append(_bad("DTYPE", "missing" if dtype is None else f"{dtype!r} is not supported"))
        dtype = "float32"
    # bf16 cannot run in Triton 3.6.0's interpreter (DESIGN.md), so its CPU twin defaults to float32.
    cpu_dtype = getattr(module, "CPU_DTYPE", "float32" if dtype == "bfloat16" else dtype)
    if cpu_dtype not in ("float32", "float16"):
        problems.append(_bad("CPU_DTYPE", f"{cpu_dtype!r}: the CPU interpreter runs float32 or float16 only"))
        cpu_dtype = "float32"
    tol = getattr(module, "TOLERANCE", None)
    tolerance: dict[str, Tolerance] = {}
    if not isinstance(tol, dict):
        problems.append(_bad("TOLERANCE", "missing" if tol is None else f"not a dict ({type(tol).__name__})"))
    else:
        for k, v in tol.items():
            if k not in DTYPES:
                problems.append(_bad("TOLERANCE", f"key {k!r} is not a dtype"))
            elif (
                not isinstance(v, (list, tuple))
                or len(v) != 2
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in v)
            ):
                problems.append(_bad("TOLERANCE", f"{k!r}: {v!r} is not [atol, rtol] (two numbers >= 0)"))
            else:
                tolerance[k] = Tolerance(atol=float(v[0]), rtol=float(v[1]))
        if missing := [d for d in dict.fromkeys((dtype, cpu_dtype)) if d not in tol]:
            problems.append(_bad("TOLERANCE", f"no entry for {missing}"))
    precision = getattr(module, "PRECISION", None)
    if precision not in PRECISIONS:
        problems.append(
            _bad("PRECISION", "missing" if precision is None else f"{precision!r} is not supported")
        )
        precision = "exact"
    return dtype, cpu_dtype, tolerance, precision


def _inplace(module: ModuleType, problems: list[str]) -> list[int]:
    v = getattr(module, "INPLACE", ())
    if isinstance(v, int) and not isinstance(v, bool):
        problems.append(_bad("INPLACE", f"{v!r} is an int, not a tuple of them (write INPLACE = ({v},))"))
        return []
    if not isinstance(v, (tuple, list)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        problems.append(_bad("INPLACE", f"{v!r} is not a tuple of input indices (names are not accepted: "
                                        "inputs are make_inputs()'s tuple, by position)"))
        return []
    if bad := [i for i in v if i < 0]:
        problems.append(_bad("INPLACE", f"negative indices {bad}; count from 0"))
    if len(set(v)) != len(v):
        problems.append(_bad("INPLACE", f"indices repeat: {list(v)}"))
    return list(v)


def _functions(module: ModuleType, config: dict[str, Any], problems: list[str]) -> set[str]:
    """The function parts that are present and callable as expected."""
    ok = set()
    for part, n in _FUNCTIONS:
        fn = getattr(module, part, None)
        kwargs = config if part == "launch" else None
        if not callable(fn):
            problems.append(_bad(part, "missing" if fn is None else f"not callable ({type(fn).__name__})"))
        elif not _takes(fn, n, kwargs):
            also = f" and every CONFIG key as a keyword ({sorted(config)})" if kwargs else ""
            problems.append(_bad(part, f"does not take {n} positional argument{'s' * (n > 1)}{also}"))
        else:
            ok.add(part)
    return ok


def _costs(module: ModuleType, shapes: TaskShapes, problems: list[str]) -> list[ShapeCost]:
    out = []
    failed: set[str] = set()  # report a formula once, at the first shape it fails on
    for name, shape in _named_shapes(shapes):
        vals: dict[str, float] = {}
        for part in ("flops", "bytes_moved"):
            if part in failed:
                continue
            failed.add(part)
            try:
                v = getattr(module, part)(dict(shape))
            except Exception as e:  # noqa: BLE001 - user code: report, do not crash the loader
                problems.append(_bad(part, f"raised {type(e).__name__}: {e} for shape {name} {shape}"))
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                problems.append(_bad(part, f"returned {v!r} for shape {name}; want a finite number >= 0"))
                continue
            vals[part] = float(v)
            failed.discard(part)
        if len(vals) == 2:
            out.append(
                ShapeCost(
                    shape_name=name, shape=dict(shape), flops=vals["flops"], bytes_moved=vals["bytes_moved"]
                )
            )
    return out


def _constraint(
    module: ModuleType, config: dict[str, Any], shapes: TaskShapes | None, problems: list[str]
) -> bool:
    c = getattr(module, "constraint", None)
    if c is None:
        return False
    if not callable(c) or not _takes(c, 2):
        problems.append(_bad("constraint", "not a function of (config, shape)"))
        return False
    if shapes is not None and config:
        for name, shape in _constraint_shapes(shapes):
            try:
                ok = c(dict(config), dict(shape))
            except Exception as e:  # noqa: BLE001
                problems.append(_bad("constraint", f"raised {type(e).__name__}: {e} on CONFIG, shape {name}"))
                continue
            if ok is not True and ok is not False:
                problems.append(_bad("constraint", f"returned {ok!r}, not a bool"))
            elif not ok:
                problems.append(_bad("constraint", f"rejects the starting CONFIG on the {name} shape"))
    return True


def _constraint_table(
    module: ModuleType,
    config: dict[str, Any],
    space: dict[str, list[Any]],
    space_configs: list[dict[str, Any]],
    shapes: TaskShapes,
) -> ConstraintTable | None:
    """constraint() over every SPACE config, on the shapes `_constraint` checks CONFIG on (so a config
    it refuses is one the static layer would refuse as a candidate's CONFIG); None without a SPACE."""
    if not space:
        return None
    return evaluate(module.constraint, config, space, space_configs, _constraint_shapes(shapes))


def _cuda(module: ModuleType, problems: list[str]) -> list[KernelInfo]:
    src, name = getattr(module, "CUDA_SOURCE", None), getattr(module, "KERNEL_NAME", None)
    if not isinstance(src, str) or not src.strip():
        problems.append(_bad("CUDA_SOURCE", "missing" if src is None else "not a non-empty str"))
    if not isinstance(name, str) or not _IDENT.match(name):
        problems.append(_bad("KERNEL_NAME", "missing" if name is None else f"{name!r} is not an identifier"))
        return []
    # `__global__ void __launch_bounds__(256, 1) name(` has parentheses before the name: skip them
    if isinstance(src, str) and not re.search(rf"__global__(?:[^(]|\([^)]*\))*?\b{re.escape(name)}\s*\(", src):
        problems.append(_bad("KERNEL_NAME", f"no __global__ function {name!r} in CUDA_SOURCE"))
    return [KernelInfo(name=name)]


def describe(module: ModuleType, path: str, sha256: str) -> tuple[TaskManifest | None, list[str]]:
    """The manifest of an imported task module, or None and every problem found."""
    from services.toolrunner.task_runtime import task_kind

    problems: list[str] = []
    kind = task_kind(module)
    if kind is None:
        return None, [
            (
                "not a kernel task: define KERNELS (Triton), CUDA_SOURCE + KERNEL_NAME (CUDA C++) or "
                "Model + get_inputs + get_init_inputs (KernelBench); see examples/README.md"
            )
        ]
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    if kind == "kernelbench":
        return _kernelbench(module, path, sha256, stem)
    kernels = _kernels(module, problems) if kind == "triton" else _cuda(module, problems)
    config, space, space_configs = _config_space(module, kernels, kind == "triton", problems)
    shapes = _shapes(module, problems)
    dtype, cpu_dtype, tolerance, precision = _dtype_parts(module, problems)
    good_fns = _functions(module, config, problems)
    inplace = _inplace(module, problems)
    has_constraint = _constraint(module, config, shapes, problems)
    has_formulas = {"flops", "bytes_moved"} <= good_fns
    costs = _costs(module, shapes, problems) if shapes is not None and has_formulas else []
    if problems or shapes is None:
        return None, problems
    table = _constraint_table(module, config, space, space_configs, shapes) if has_constraint else None
    cuda_sha, cuda_line = "", 0
    if kind == "cuda":
        import hashlib

        cuda_sha = hashlib.sha256(module.CUDA_SOURCE.encode()).hexdigest()
        cuda_line = _cuda_source_line(path)
    return TaskManifest(
        path=path,
        sha256=sha256,
        kind=kind,
        name=stem,
        kernels=kernels,
        config=config,
        space=space,
        space_configs=space_configs,
        has_constraint=has_constraint,
        constraint_table=table,
        inplace=inplace,
        shapes=shapes,
        dtype=dtype,  # type: ignore[arg-type]
        cpu_dtype=cpu_dtype,
        tolerance=tolerance,
        precision=precision,  # type: ignore[arg-type]
        costs=costs,
        cuda_source_sha256=cuda_sha,
        cuda_source_line=cuda_line,
        notes=[table.note] if table is not None and table.note else [],
    ), []


def _cuda_source_line(path: str) -> int:
    """The line of the task file where the CUDA_SOURCE string opens (line 1 of the compiled .cu copy), or
    0 when it is not a literal assignment (e.g. read from another file)."""
    import ast

    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return 0
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "CUDA_SOURCE" for t in node.targets)
            and isinstance(node.value, ast.Constant)
        ):
            return node.value.lineno
    return 0


# KernelBench's own default (src/kernelbench/eval.py: atol = rtol = 1e-02).
KERNELBENCH_TOLERANCE = Tolerance(atol=1e-2, rtol=1e-2)


def _kernelbench(
    module: ModuleType, path: str, sha256: str, stem: str
) -> tuple[TaskManifest | None, list[str]]:
    import torch
    from triton.runtime.jit import JITFunction

    problems = []
    if not (isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)):
        problems.append(_bad("Model", "not a torch.nn.Module subclass"))
    for part in ("get_inputs", "get_init_inputs"):
        fn = getattr(module, part, None)
        if not callable(fn) or not _takes(fn, 0):
            problems.append(_bad(part, "missing" if fn is None else "not a function of no arguments"))
    new = getattr(module, "ModelNew", None)
    if new is not None and not (isinstance(new, type) and issubclass(new, torch.nn.Module)):
        problems.append(_bad("ModelNew", "not a torch.nn.Module subclass"))
    if problems:
        return None, problems
    kernels = [
        KernelInfo(
            name=v.__name__,
            params=[p.name for p in v.params],
            constexprs=[p.name for p in v.params if p.is_constexpr],
        )
        for v in vars(module).values()
        if isinstance(v, JITFunction)
    ]
    # KernelBench problems fix their sizes in get_inputs(): one shape, no size parameters.
    shapes = TaskShapes(micro={}, full={}, edge=[])
    return TaskManifest(
        path=path,
        sha256=sha256,
        kind="kernelbench",
        name=stem,
        kernels=kernels,
        shapes=shapes,
        dtype="float32",
        cpu_dtype="float32",
        tolerance={"float32": KERNELBENCH_TOLERANCE},
        precision="exact",
        has_candidate=new is not None,
        notes=[
            "KernelBench problem: sizes are fixed by get_inputs(); no FLOP/byte formula, so no roofline bound"
        ],
    ), []

"""The planner's context: what a policy sees before it proposes (DESIGN.md, "One job", step 2).

State triples ordered by importance for the kernel class, the decomposer's IR summary (<= 750 tokens, with
line references) and findings, hardware constraints written as rules, and past attempts with verdicts.
The task is read from its literals (`CONFIG`, `SPACE`, `SHAPES`, ...) with `ast`; it is never imported.
A `CONFIG` or `SPACE` computed by code is taken from the toolrunner's `load_task` manifest instead (the
value the sandboxed import evaluated; `read_task(..., evaluated=manifest)`), never by running it here.

The kernel classes with their importance order (shared/kernel_classes.py) and the token rule
(shared/tokens.py) live in shared/, so telemetry and the decomposer use the same ones (DESIGN.md, rule 1).
"""

from __future__ import annotations

import ast
from typing import Literal

import msgspec

from services.planner.patcher import TaskSource
from shared.constraint_table import ConstraintScope
from shared.gpu_facts import H200, GpuFacts
from shared.kernel_classes import classify_kernel, order_triples
from shared.messages import ChangeDescription, Scalar, StateTriple
from shared.space_list import domains, is_list
from shared.tokens import TOKEN_LIMIT, count_tokens, truncate_lines
from shared.tools.decompose import Decomposition, Finding
from shared.tools.task import TaskManifest

AttemptStatus = Literal["pending", "pass", "fail", "timeout", "rejected"]


class TaskView(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A task file's literals, read with ast (no code runs)."""

    path: str
    sha256: str
    kernels: list[str]  # @triton.jit functions, in file order
    primary: str
    config: dict[str, Scalar]
    space: dict[str, list[Scalar]]  # key -> values; for a list SPACE each key's listed values
    shapes: dict[str, dict[str, int]]
    dtype: str
    edge_shapes: list[dict[str, int]] = []  # SHAPES["edge"]
    precision: str
    source: str = ""  # the file's text (rules read line references from it; never rendered whole)
    space_configs: list[dict[str, Scalar]] = []  # SPACE given as a list of configs (shared/space_list.py)


class ComputedConfig(ValueError):
    """CONFIG (or SPACE) is assigned by code, not a literal: its value comes from the toolrunner's
    `load_task` (the sandbox evaluates it); call read_task again with `evaluated=` that manifest."""


def _computed(tree: ast.Module, name: str) -> bool:
    """The last top-level assignment of `name` (the one Python keeps) is not a literal."""
    last = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            last = node
    if last is None:
        return False
    try:
        ast.literal_eval(last.value)
    except ValueError:
        return True
    return False


def read_task(path: str, source: str, evaluated: TaskManifest | None = None) -> TaskView:
    """The task's view from its literals. A computed CONFIG/SPACE is taken from `evaluated` (the
    load_task manifest of this file); without it, ComputedConfig says to ask load_task. Raises
    ValueError naming the missing part when there is no CONFIG at all."""
    import hashlib

    src = TaskSource(source, path)
    kernels = [
        n.name
        for n in src.tree.body
        if isinstance(n, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in n.decorator_list)
    ]
    lits: dict[str, object] = {}
    for node in src.tree.body:  # in file order: a later literal assignment replaces an earlier one
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                lits[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                lits.pop(node.targets[0].id, None)
                continue
    computed = [n for n in ("CONFIG", "SPACE") if _computed(src.tree, n)]
    if computed and evaluated is None:
        raise ComputedConfig(
            f"{path}: {' and '.join(computed)} computed by code: the planner takes "
            f"{'their values' if len(computed) > 1 else 'its value'} from the toolrunner's load_task "
            "(read_task(path, source, evaluated=manifest))"
        )
    if evaluated is not None and "CONFIG" in computed:
        lits["CONFIG"] = dict(evaluated.config)
    if evaluated is not None and "SPACE" in computed:
        lits["SPACE"] = list(evaluated.space_configs) if evaluated.space_configs else dict(evaluated.space)
    space = lits.get("SPACE")
    entries = [dict(e) for e in space if isinstance(e, dict)] if is_list(space) else []  # type: ignore[union-attr]
    config = lits.get("CONFIG")
    names = {n.name for n in src.tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    if config is None and {"Model", "get_inputs", "get_init_inputs"} <= names:
        config = {}  # a KernelBench problem: sizes and launch live in ModelNew; nothing to tune by CONFIG
    if not isinstance(config, dict):  # the user's file is wrong, like every task refusal: ValueError
        raise ValueError(  # noqa: TRY004
            f"{path}: CONFIG must be a dict (a literal such as CONFIG = {{'BLOCK': 128, "
            "'num_warps': 4}, or code computing one) for the planner to tune it"
        )
    shapes = lits.get("SHAPES") if isinstance(lits.get("SHAPES"), dict) else {}
    return TaskView(
        path=path,
        sha256=hashlib.sha256(source.encode()).hexdigest(),
        kernels=kernels,
        primary=_declared_primary(src.tree) or (kernels[0] if kernels else ""),
        config=config,
        space=domains(entries) if entries else space if isinstance(space, dict) else {},  # type: ignore[arg-type]
        space_configs=entries,
        shapes={k: v for k, v in shapes.items() if isinstance(v, dict)},  # type: ignore[union-attr]
        edge_shapes=[e for e in shapes.get("edge", []) if isinstance(e, dict)],  # type: ignore[union-attr]
        dtype=str(lits.get("DTYPE", "float32")),
        precision=str(lits.get("PRECISION", "exact")),
        source=source,
    )


def defines_constraint(source: str) -> bool:
    """The task file binds a top-level `constraint` (a def, an assignment or an import): load_task then
    has a table of what it refuses. A file that does not parse has nothing to ask about."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "constraint":
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "constraint"
                                                for t in node.targets):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name) == "constraint" for a in node.names):
            return True
    return False


def primary_of(path: str, source: str) -> str:
    """The primary kernel (KERNELS[0], else the first @triton.jit function) without reading CONFIG."""
    tree = ast.parse(source, filename=path)
    jit = [n.name for n in tree.body
           if isinstance(n, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in n.decorator_list)]
    return _declared_primary(tree) or (jit[0] if jit else "")


def _declared_primary(tree: ast.Module) -> str:
    """KERNELS[0] when the file assigns KERNELS a literal tuple/list of names (examples/README.md)."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "KERNELS" and isinstance(node.value, (ast.Tuple, ast.List))
                and node.value.elts and isinstance(node.value.elts[0], ast.Name)):
            return node.value.elts[0].id
    return ""


class Attempt(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One candidate the job tried, with what the funnel said about it."""

    candidate_id: str
    version: int
    config: dict[str, Scalar]
    changes: list[ChangeDescription] = []
    status: AttemptStatus = "pending"
    layer: str = ""  # the last layer that answered
    score: float | None = None  # objective at the last measured layer (higher = better)
    score_name: str = ""
    reasons: list[str] = []
    gpu_seconds: float = 0.0


class PlannerContext(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kernel: str
    kernel_class: str
    task: TaskView
    has_dot: bool
    triples: list[StateTriple] = []
    ir_summary: str = ""
    ir_tokens: int = 0
    findings: list[Finding] = []
    roofline_fraction: float | None = None
    hardware_rules: list[str] = []
    attempts: list[Attempt] = []
    best_config: dict[str, Scalar] = {}
    best_changes: list[ChangeDescription] = []  # source changes the best passing candidate carries
    tool_results: list[str] = []  # one line per tool the last plan asked for
    rejected: list[str] = []  # patcher errors of the last plans, so a policy can correct itself
    # config_key -> programs of the config's smallest launch at the full shape (the launch_grid tool);
    # empty when not recorded (a CUDA task, a SPACE over MAX_CONFIGS, make_inputs needing real data)
    programs: dict[str, int] = {}
    # load_task's tables of the task's constraint() (shared/constraint_table.py): the configs a policy
    # must not propose; empty when the task has no constraint or its table could not be had
    constraints: list[ConstraintScope] = []


def hardware_rules(gpu: GpuFacts = H200) -> list[str]:
    """GPU.md's constraints, stated as rules a plan must respect."""
    return [
        (
            f"{gpu.name} ({gpu.arch}, build sm_90a): {int(gpu.sm_count.value)} SMs, "
            f"L2 {gpu.l2_bytes.value / 2**20:.0f} MiB."
        ),
        (
            f"Shared memory: at most {int(gpu.shared_per_block_optin.value)} B per block (227 KB opt-in), "
            f"{int(gpu.shared_per_sm.value)} B per SM; the driver reserves "
            f"{int(gpu.shared_reserved_per_block.value)} B per block."
        ),
        "Shared memory has 32 banks x 4 B: a column walk of 128 B rows hits one bank unless swizzled/padded.",
        (
            f"Registers: {int(gpu.max_registers_per_thread.value)} per thread max, "
            f"{int(gpu.registers_per_sm.value)} per SM; more than that spills to local memory."
        ),
        (
            f"Threads: at most {int(gpu.max_threads_per_block.value)} per block (num_warps <= 32); "
            f"{int(gpu.max_warps_per_sm.value)} warps, {int(gpu.max_blocks_per_sm.value)} blocks per SM."
        ),
        "Matmul-like tiles need (BM*BK + BK*BN) * bytes * num_stages of shared memory.",
        "wgmma needs num_warps % 4 == 0, M tile % 64 == 0, N % 8 == 0, K >= 16 (bf16/fp16), B in shared.",
        "TMA needs 16 B aligned base and strides, box dims <= 256, inner box bytes a multiple of 16.",
        "Global memory: 32 B sectors, 128 B lines; 16 B per thread vector accesses are ideal.",
        (
            f"Roofs (measured): copy {gpu.copy_bandwidth.value / 1e12:.2f} TB/s, bf16 dense "
            f"{gpu.bf16_dense_flops.value / 1e12:.0f} TFLOP/s."
        ),
    ]


def _has_dot(d: Decomposition | None, kernel_class: str) -> bool:
    if d is not None and d.nodes:
        return any(n.op in ("tt.dot", "ttng.warp_group_dot", "tt.dot_scaled") for n in d.nodes)
    return kernel_class in ("gemm", "attention")


def build_context(
    task: TaskView,
    kernel: str,
    decomposition: Decomposition | None = None,
    triples: list[StateTriple] | None = None,
    attempts: list[Attempt] | None = None,
    gpu: GpuFacts = H200,
) -> PlannerContext:
    cls = classify_kernel(kernel or task.primary or task.path)
    summary = truncate_lines(decomposition.summary, TOKEN_LIMIT) if decomposition is not None else ""
    done = [a for a in attempts or [] if a.status == "pass" and a.score is not None]
    best = max(done, key=lambda a: a.score or 0.0) if done else None
    roof = decomposition.roofline.fraction_of_roof if decomposition is not None else None
    return PlannerContext(
        kernel=kernel or task.primary,
        kernel_class=cls,
        task=task,
        has_dot=_has_dot(decomposition, cls),
        triples=order_triples(list(triples or []), cls),
        ir_summary=summary,
        ir_tokens=count_tokens(summary),
        findings=list(decomposition.findings) if decomposition is not None else [],
        roofline_fraction=roof,
        hardware_rules=hardware_rules(gpu),
        attempts=list(attempts or []),
        best_config=dict(best.config) if best else dict(task.config),
        best_changes=[c for c in best.changes if c.change not in _CONFIG_KINDS] if best else [],
    )


_CONFIG_KINDS = ("set_constexpr", "set_num_warps", "set_num_stages", "set_maxnreg")


def render(ctx: PlannerContext, max_attempts: int = 12) -> str:
    """The context as prompt text: most important first, every section bounded."""
    out = [
        (
            f"kernel {ctx.kernel} (class {ctx.kernel_class}) task {ctx.task.path} dtype {ctx.task.dtype} "
            f"precision {ctx.task.precision}"
        ),
        f"config {ctx.task.config}",
        f"space {ctx.task.space_configs or ctx.task.space}",
        f"best config so far {ctx.best_config}",
    ]
    if ctx.triples:
        out.append("state (most important first):")
        out += [
            f"  {t.resource}@{t.space} {t.time} {t.value:.3g} {t.unit} <{t.source}>" for t in ctx.triples[:16]
        ]
    if ctx.ir_summary:
        out += ["IR summary (line refs [Lnn] point into the task file):", ctx.ir_summary]
    if ctx.findings:
        out.append("findings (pattern -> change kinds that address it):")
        out += [
            f"  {f.severity} {f.pattern} score {f.score:.2f} at {', '.join(f.locations[:3]) or '?'} -> "
            f"{', '.join(f.transformations)}"
            for f in ctx.findings[:8]
        ]
    out += ["hardware rules:"] + [f"  - {r}" for r in ctx.hardware_rules]
    if ctx.attempts:
        out.append("past attempts (newest last):")
        for a in ctx.attempts[-max_attempts:]:
            score = f" {a.score_name}={a.score:.4g}" if a.score is not None else ""
            why = f" ({'; '.join(a.reasons)[:160]})" if a.reasons else ""
            out.append(f"  v{a.version} {a.status}@{a.layer or '-'}{score} config {a.config}{why}")
    return "\n".join(out)

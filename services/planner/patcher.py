"""The deterministic patcher: change descriptions -> an immutable, self-contained candidate task file.

Every change is resolved against the parent source into a span (start, end, new text) first; spans must
not overlap; they are then applied from the end of the file backwards, so each line reference names a
line of the parent, whatever the other changes do. Config changes rewrite the literal `CONFIG = {...}`
dict, so even a config-only candidate is a complete task file the verifier can check on its own. A CONFIG
computed by code is never rewritten: the patcher appends a literal `CONFIG = {...}` at the end of the file
(the last assignment wins, as Python runs it), starting from the evaluated value the caller passes
(load_task's manifest); later config changes rewrite that literal (examples/README.md, "Computed CONFIG").

A change that does not apply is a result (`PatchRejected` naming the change, why and the nearest match),
never an exception. Nothing here runs task code: the source is only parsed (`ast`).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import itertools
import re
from pathlib import Path

import msgspec

from shared.messages import ChangeDescription, Scalar
from shared.space_list import is_list, points
from shared.transforms.base import Refused
from shared.transforms.table import apply as apply_transform

CONFIG_ONLY = ("set_constexpr", "set_num_warps", "set_num_stages", "set_maxnreg")
LAUNCH_KEYS = {"set_num_warps": "num_warps", "set_num_stages": "num_stages", "set_maxnreg": "maxnreg"}
# A block holds at most 1024 threads = 32 warps (CUDA guide, cc 9.0); Triton wants a power of two.
MAX_WARPS = 32
MAX_STAGES = 8  # beyond 8 stages no Hopper tile fits 227 KB of shared memory (GPU.md) with a useful K
# ptxas accepts a register cap up to the 255 per thread of GPU.md; below 24 nothing but trivial code fits
# (setmaxnreg's own lower bound on sm_90 is 24).
MAXNREG_RANGE = (24, 255)
EVICTION = ("evict_first", "evict_last", "evict_normal")
# The line before a literal CONFIG the patcher appends to a task whose CONFIG is computed by code.
CONFIG_OVERRIDE = "\n# kernelpilot: the tuned config; it replaces the computed CONFIG above (the last assignment wins)\n"
# A search block must start within this many lines of its anchor: findings point at the line of the
# offending op, and an edit of the surrounding statement rarely starts further away than a loop header.
ANCHOR_WINDOW = 12


class PatchError(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    change_index: int  # position in the change list; -1 = the result as a whole
    change: str  # the change kind
    reason: str
    nearest: str = ""  # the closest text that would have matched, when there is one
    nearest_line: int | None = None


class PatchRejected(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    errors: list[PatchError]

    def summary(self) -> str:
        return "; ".join(f"change {e.change_index} ({e.change}): {e.reason}" for e in self.errors)


class CandidateVersion(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An immutable candidate: `path` = <root>/<sha256>/task.py holds exactly the bytes `sha256` names."""

    sha256: str
    path: str
    version: int
    parent_path: str
    parent_sha256: str
    config: dict[str, Scalar]
    changes: list[ChangeDescription]
    diff: str


class _Span(msgspec.Struct, frozen=True):
    start: int
    end: int
    text: str
    index: int


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- reading the task source


class TaskSource:
    """A parsed task file: its lines, the CONFIG/SPACE literals and launch()'s parameters."""

    def __init__(self, source: str, filename: str = "task.py") -> None:
        self.source = source
        self.filename = filename
        self.tree = ast.parse(source, filename=filename)
        self.lines = source.splitlines(keepends=True)
        self._starts = [0]
        for line in self.lines:
            self._starts.append(self._starts[-1] + len(line))
        self.config_node = self._assigned("CONFIG")
        self.space_node = self._assigned("SPACE")

    def offset(self, line: int, col: int = 0) -> int:
        """Character offset of (1-based line, 0-based col); col counts UTF-8 bytes as ast does."""
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return self._starts[line - 1] + len(text.encode()[:col].decode(errors="ignore"))

    def node_span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),
        )  # type: ignore[attr-defined]

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self._starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def _assigned(self, name: str) -> ast.Assign | None:
        """The last top-level assignment of `name`: the value Python keeps."""
        last = None
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets
            ):
                last = node
        return last

    def computed(self, name: str) -> bool:
        """`name` is assigned at module level, but by code, not a literal (a computed CONFIG/SPACE)."""
        node = self._assigned(name)
        if node is None:
            return False
        try:
            ast.literal_eval(node.value)
        except ValueError:
            return True
        return False

    def literal(self, name: str) -> dict | None:
        """A top-level dict literal by name (CONFIG, SPACE, SHAPES, ...); None when absent or not literal."""
        if name in ("CONFIG", "SPACE"):
            node = self.config_node if name == "CONFIG" else self.space_node
        else:  # every other name used to read SPACE by mistake
            node = self._assigned(name)
        if node is None:
            return None
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def space_entries(self) -> list[dict] | None:
        """SPACE given as a literal list of configs (autotune-style); None when it is not one."""
        node = self.space_node
        if node is None:
            return None
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            return None
        return [dict(e) for e in value if isinstance(e, dict)] if isinstance(value, (list, tuple)) else None

    def function(self, name: str) -> ast.FunctionDef | None:
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
        return None

    def launch_accepts(self, key: str) -> bool:
        fn = self.function("launch")
        if fn is None:
            return False
        a = fn.args
        names = [x.arg for x in a.args + a.kwonlyargs]
        return key in names or a.kwarg is not None


def parse_anchor(ref: str) -> int | None:
    """A line number from "42", "L42", "line 42", "path/task.py:42" or "task.py:42:7"; None if none."""
    ref = ref.strip()
    m = re.fullmatch(r"(?:L|line\s*)?(\d+)", ref, re.IGNORECASE) or re.fullmatch(r".*?:(\d+)(?::\d+)?", ref)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------- config changes


def _config_value_error(kind: str, key: str, value: Scalar | None, space: dict | None) -> str | None:
    if kind == "set_maxnreg" and value is None:
        return None  # removes the cap
    if value is None or isinstance(value, bool) and kind != "set_constexpr":
        return f"needs a value, e.g. ChangeDescription(change={kind!r}, value=...)"
    if kind == "set_num_warps" and (
        not isinstance(value, int) or not 1 <= value <= MAX_WARPS or value & (value - 1)
    ):
        return f"num_warps={value!r}: must be a power of two from 1 to {MAX_WARPS} (1024 threads)"
    if kind == "set_num_stages" and (not isinstance(value, int) or not 1 <= value <= MAX_STAGES):
        return f"num_stages={value!r}: must be an int from 1 to {MAX_STAGES}"
    if kind == "set_maxnreg" and (
        not isinstance(value, int) or not MAXNREG_RANGE[0] <= value <= MAXNREG_RANGE[1]
    ):
        return (
            f"maxnreg={value!r}: must be an int from {MAXNREG_RANGE[0]} to {MAXNREG_RANGE[1]} (GPU.md: 255)"
        )
    if space is not None and key in space and value not in space[key]:
        return f"{key}={value!r} is outside the task's SPACE: allowed {space[key]}"
    return None


def _nearest_value(value: Scalar | None, allowed: list) -> str:
    nums = [v for v in allowed if isinstance(v, int | float) and not isinstance(v, bool)]
    if isinstance(value, int | float) and nums:
        return repr(min(nums, key=lambda v: abs(v - value)))
    return ""


def format_config(config: dict[str, Scalar], indent: str = "") -> str:
    one = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in config.items()) + "}"
    if len(indent) + len("CONFIG = ") + len(one) <= 110:
        return one.replace("'", '"')
    body = "".join(f'{indent}    "{k}": {v!r},\n' for k, v in config.items())
    return "{\n" + body.replace("'", '"') + indent + "}"


# ---------------------------------------------------------------- source changes


def _nearest_block(src: TaskSource, search: str, around: int | None) -> tuple[str, int | None]:
    """The window of source lines most like `search` (ties go to the one nearest the anchor)."""
    want = search.splitlines() or [search]
    n = len(want)
    best: tuple[float, int] = (-1.0, 0)
    best_i = 0
    for i in range(max(1, len(src.lines) - n + 1)):
        got = [x.rstrip("\n") for x in src.lines[i : i + n]]
        key = (
            difflib.SequenceMatcher(None, "\n".join(want), "\n".join(got)).ratio(),
            -abs(i + 1 - around) if around else 0,
        )
        if key > best:
            best, best_i = key, i
    if best[0] < 0.4:  # under 40 % similar is not a near miss worth showing
        return "", None
    return "".join(src.lines[best_i : best_i + n]).rstrip("\n"), best_i + 1


def _source_edit(src: TaskSource, i: int, ch: ChangeDescription) -> _Span | PatchError:
    if not ch.search:
        return PatchError(
            change_index=i,
            change=ch.change,
            reason="source_edit needs `search` (the exact "
            "text to replace, copied from the source) and `replace`",
        )
    anchor = parse_anchor(ch.target) if ch.target else None
    if ch.target and anchor is None:
        return PatchError(
            change_index=i,
            change=ch.change,
            reason=f"target {ch.target!r} is not a line reference; use 'task.py:42', 'L42' or '42'",
        )
    hits = [m.start() for m in re.finditer(re.escape(ch.search), src.source)]
    if anchor is not None:
        near = [(abs(src.line_of(h) - anchor), h) for h in hits]
        near = [x for x in near if x[0] <= ANCHOR_WINDOW]
        if near:
            near.sort()
            if len(near) > 1 and near[0][0] == near[1][0]:
                return PatchError(
                    change_index=i,
                    change=ch.change,
                    reason=f"`search` occurs twice at the "
                    f"same distance from line {anchor}; add a neighbouring line to it",
                )
            hits = [near[0][1]]
        elif hits:
            return PatchError(
                change_index=i,
                change=ch.change,
                reason=f"`search` occurs at line(s) "
                f"{sorted({src.line_of(h) for h in hits})}, not within {ANCHOR_WINDOW} lines "
                f"of the anchor line {anchor}",
                nearest_line=src.line_of(hits[0]),
            )
    if len(hits) > 1:
        return PatchError(
            change_index=i,
            change=ch.change,
            reason=f"`search` occurs {len(hits)} times (lines "
            f"{[src.line_of(h) for h in hits]}); give an anchor line in `target`",
        )
    if not hits:
        text, line = _nearest_block(src, ch.search, anchor)
        return PatchError(
            change_index=i,
            change=ch.change,
            reason="`search` text not found in the source"
            + (" (copy it exactly, with indentation)" if text else ""),
            nearest=text,
            nearest_line=line,
        )
    return _Span(hits[0], hits[0] + len(ch.search), ch.replace, i)


def _statement_at(src: TaskSource, line: int) -> ast.stmt | None:
    """The innermost simple statement spanning `line` (compound statements hold other statements)."""
    compound = ast.FunctionDef | ast.For | ast.While | ast.If | ast.With | ast.ClassDef
    spanning = [
        n
        for n in ast.walk(src.tree)
        if isinstance(n, ast.stmt)
        and not isinstance(n, compound)
        and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    return max(spanning, key=lambda n: n.lineno, default=None)


def _add_hint(src: TaskSource, i: int, ch: ChangeDescription) -> _Span | PatchError:
    line = parse_anchor(ch.target)
    if line is None or not 1 <= line <= len(src.lines):
        return PatchError(
            change_index=i,
            change=ch.change,
            reason=f"add_hint needs an anchor line in `target` within 1..{len(src.lines)}, got {ch.target!r}",
        )
    stmt = _statement_at(src, line)
    if stmt is None:
        return PatchError(change_index=i, change=ch.change, reason=f"line {line} holds no statement")
    if ch.hint in ("multiple_of", "max_contiguous"):
        var = ch.search.strip()
        targets = [t.id for t in getattr(stmt, "targets", []) if isinstance(t, ast.Name)]
        if not var.isidentifier() or var not in targets:
            return PatchError(
                change_index=i,
                change=ch.change,
                reason=f"{ch.hint} needs `search` = the "
                f"variable assigned on line {line} (assigned there: {targets or 'nothing'})",
                nearest=src.lines[line - 1].rstrip("\n"),
                nearest_line=line,
            )
        if ch.value is None or isinstance(ch.value, bool | float):
            return PatchError(
                change_index=i,
                change=ch.change,
                reason=f"{ch.hint} needs `value` = an int or a constexpr name, e.g. 16 or 'BLOCK_SIZE'",
            )
        if isinstance(ch.value, str) and not ch.value.isidentifier():
            return PatchError(change_index=i, change=ch.change, reason=f"value {ch.value!r} is not a name")
        indent = re.match(r"\s*", src.lines[stmt.lineno - 1]).group(0)  # type: ignore[union-attr]
        end = stmt.end_lineno or stmt.lineno
        at = src.offset(end + 1) if end < len(src.lines) else len(src.source)
        text = f"{indent}{var} = tl.{ch.hint}({var}, {ch.value})\n"
        return _Span(at, at, text, i)
    if ch.hint == "eviction_policy":
        if ch.value not in EVICTION:
            return PatchError(
                change_index=i,
                change=ch.change,
                reason=f"eviction_policy value must be one of {list(EVICTION)}, got {ch.value!r}",
            )
        calls = [
            n
            for n in ast.walk(stmt)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("load", "store")
            and n.lineno <= line <= (n.end_lineno or n.lineno)
        ]
        if len(calls) != 1:
            return PatchError(
                change_index=i,
                change=ch.change,
                reason=f"line {line} must hold exactly one tl.load/tl.store call (found {len(calls)})",
                nearest=src.lines[line - 1].rstrip("\n"),
                nearest_line=line,
            )
        call = calls[0]
        for kw in call.keywords:
            if kw.arg == "eviction_policy":
                s, e = src.node_span(kw.value)
                return _Span(s, e, repr(ch.value).replace("'", '"'), i)
        _, end = src.node_span(call)
        return _Span(end - 1, end - 1, f', eviction_policy="{ch.value}"', i)
    return PatchError(
        change_index=i,
        change=ch.change,
        reason=f"add_hint needs `hint`: one of multiple_of, "
        f"max_contiguous, eviction_policy (got {ch.hint!r})",
    )


def _set_grid(src: TaskSource, i: int, ch: ChangeDescription) -> _Span | PatchError:
    fn_name = ch.target or "launch"
    fn = src.function(fn_name)
    if fn is None:
        return PatchError(change_index=i, change=ch.change, reason=f"no function {fn_name!r} in the task")
    expr = ch.value if isinstance(ch.value, str) else ""
    try:
        ast.parse(expr, mode="eval")
    except SyntaxError as e:
        return PatchError(
            change_index=i,
            change=ch.change,
            reason=f"set_grid value must be a Python "
            f"expression for the grid, e.g. '(triton.cdiv(n, BLOCK),)': {e.msg}",
        )
    grids = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "grid" for t in n.targets)
    ]
    if len(grids) != 1:
        return PatchError(
            change_index=i,
            change=ch.change,
            reason=f"{fn_name}() has {len(grids)} `grid = "
            "...` assignments; set_grid rewrites exactly one (use source_edit otherwise)",
        )
    s, e = src.node_span(grids[0].value)
    return _Span(s, e, expr, i)


# ---------------------------------------------------------------- applying


def apply_changes(
    source: str,
    changes: list[ChangeDescription],
    filename: str = "task.py",
    config: dict[str, Scalar] | None = None,
    space: dict | list | None = None,
) -> tuple[str, dict[str, Scalar]] | PatchRejected:
    """The patched source and its CONFIG, or every reason the changes do not apply.

    Changes apply in list order: a `transform` rewrites the whole current source (shared/transforms/);
    the other changes between two transforms resolve against the source as it is at their place, as
    spans. So a stacked job (best changes + a new transform + config) replays exactly.

    `config`/`space`: the task's evaluated CONFIG/SPACE (load_task's manifest), used only where the
    source computes them by code instead of writing literals."""
    if not any(ch.change == "transform" for ch in changes):
        return _apply_spans(source, changes, filename, config, space)
    text = source
    batch: list[int] = []

    def flush() -> tuple[str, dict[str, Scalar]] | PatchRejected:
        got = _apply_spans(text, [changes[j] for j in batch], filename, config, space)
        if isinstance(got, PatchRejected):  # indices of the batch -> indices of the whole list
            return PatchRejected(errors=[msgspec.structs.replace(
                e, change_index=batch[e.change_index] if 0 <= e.change_index < len(batch) else e.change_index)
                for e in got.errors])
        return got

    for i, ch in enumerate(changes):
        if ch.change != "transform":
            batch.append(i)
            continue
        if batch:
            got = flush()
            if isinstance(got, PatchRejected):
                return got
            text, batch = got[0], []
        done = apply_transform(text, ch.transform, dict(ch.params), ch.target, filename)
        if isinstance(done, Refused):
            return PatchRejected(errors=[PatchError(change_index=i, change="transform",
                                                    reason=f"{ch.transform}: {done.reason}")])
        text = done.source
    return flush()


def _apply_spans(
    source: str,
    changes: list[ChangeDescription],
    filename: str = "task.py",
    evaluated_config: dict[str, Scalar] | None = None,
    evaluated_space: dict | list | None = None,
) -> tuple[str, dict[str, Scalar]] | PatchRejected:
    try:
        src = TaskSource(source, filename)
    except SyntaxError as e:
        return PatchRejected(
            errors=[
                PatchError(
                    change_index=-1,
                    change="parse",
                    reason=f"the parent does not parse: line {e.lineno}: {e.msg}",
                )
            ]
        )
    errors: list[PatchError] = []
    spans: list[_Span] = []
    config = src.literal("CONFIG")
    computed = src.computed("CONFIG")
    if computed and evaluated_config is not None:
        config = dict(evaluated_config)
    space = src.literal("SPACE")
    entries = src.space_entries()  # a list SPACE: the result must be one of its configs
    if space is None and entries is None and src.computed("SPACE") and evaluated_space is not None:
        if is_list(evaluated_space):
            entries = [dict(e) for e in evaluated_space]
        else:
            space = dict(evaluated_space)
    new_config = dict(config) if config is not None else None
    for i, ch in enumerate(changes):
        if ch.change in CONFIG_ONLY:
            if new_config is None:
                errors.append(
                    PatchError(
                        change_index=i,
                        change=ch.change,
                        reason="CONFIG is computed by code: pass its evaluated value (load_task's "
                        "manifest.config) so the patcher can append the changed literal"
                        if computed
                        else "the task has no `CONFIG = {...}` dict at module level to rewrite",
                    )
                )
                continue
            key = LAUNCH_KEYS.get(ch.change, ch.target)
            if ch.change == "set_constexpr" and (key not in new_config or key in LAUNCH_KEYS.values()):
                close = difflib.get_close_matches(
                    key, [k for k in new_config if k not in LAUNCH_KEYS.values()]
                )
                errors.append(
                    PatchError(
                        change_index=i,
                        change=ch.change,
                        reason=f"{key!r} is not a constexpr of CONFIG ({', '.join(new_config)})",
                        nearest=close[0] if close else "",
                    )
                )
                continue
            why = _config_value_error(ch.change, key, ch.value, space)
            if why is not None:
                near = _nearest_value(ch.value, space[key]) if space and key in space else ""
                errors.append(PatchError(change_index=i, change=ch.change, reason=why, nearest=near))
                continue
            if key not in new_config and not src.launch_accepts(key):
                errors.append(
                    PatchError(
                        change_index=i,
                        change=ch.change,
                        reason=f"launch() takes no "
                        f"{key!r} argument; add `{key}=None` to its parameters first",
                    )
                )
                continue
            if ch.value is None:
                new_config.pop(key, None)
            else:
                new_config[key] = ch.value
            continue
        handler = {"source_edit": _source_edit, "add_hint": _add_hint, "set_grid": _set_grid}.get(ch.change)
        if handler is None:
            errors.append(PatchError(change_index=i, change=ch.change, reason="unknown change kind"))
            continue
        got = handler(src, i, ch)
        (errors if isinstance(got, PatchError) else spans).append(got)  # type: ignore[arg-type]
    if entries is not None and new_config is not None and config is not None and new_config != config:
        allowed = points(config, entries)
        if new_config not in allowed:
            close = difflib.get_close_matches(format_config(new_config), [format_config(c) for c in allowed], 1, 0)
            errors.append(PatchError(
                change_index=len(changes) - 1, change=_kind(changes, len(changes) - 1),
                reason=f"config {format_config(new_config)} is not one of SPACE's {len(allowed)} listed configs "
                "(SPACE is a list: change the knobs together to one of its entries)",
                nearest=close[0] if close else ""))
    if new_config is not None and new_config != config and computed:
        sep = "" if source.endswith("\n") else "\n"
        spans.append(_Span(len(source), len(source), f"{sep}{CONFIG_OVERRIDE}CONFIG = "
                           f"{format_config(new_config)}\n", len(changes)))
    elif new_config is not None and new_config != config and src.config_node is not None:
        s, e = src.node_span(src.config_node.value)
        spans.append(_Span(s, e, format_config(new_config), len(changes)))
    spans.sort(key=lambda x: (x.start, x.end, x.index))
    for a, b in itertools.pairwise(spans):
        if b.start < a.end:
            errors.append(
                PatchError(
                    change_index=b.index,
                    change=_kind(changes, b.index),
                    reason=f"overlaps change {a.index} (lines {src.line_of(a.start)}-"
                    f"{src.line_of(a.end)}); merge them into one source_edit",
                )
            )
    if errors:
        return PatchRejected(errors=errors)
    out = source
    for sp in reversed(spans):
        out = out[: sp.start] + sp.text + out[sp.end :]
    try:
        ast.parse(out, filename=filename)
    except SyntaxError as e:
        return PatchRejected(
            errors=[
                PatchError(
                    change_index=-1,
                    change="parse",
                    reason=f"the patched source does not parse: line {e.lineno}: {e.msg}",
                    nearest=(e.text or "").rstrip("\n"),
                    nearest_line=e.lineno,
                )
            ]
        )
    final = TaskSource(out, filename).literal("CONFIG")
    return out, dict(final if final is not None else config or {})


def _kind(changes: list[ChangeDescription], index: int) -> str:
    return changes[index].change if index < len(changes) else "config"


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{old_name}",
            tofile=f"b/{new_name}",
        )
    )


def make_candidate(
    root: Path,
    parent_path: str,
    parent_source: str,
    changes: list[ChangeDescription],
    version: int,
    config: dict[str, Scalar] | None = None,
    space: dict | list | None = None,
) -> CandidateVersion | PatchRejected:
    """Apply `changes` to the parent and store the result at <root>/<sha256>/task.py (write-once);
    `config`/`space` as in apply_changes."""
    got = apply_changes(parent_source, changes, Path(parent_path).name, config, space)
    if isinstance(got, PatchRejected):
        return got
    text, config = got
    sha = sha256_text(text)
    path = root / sha / "task.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)  # atomic: a reader never sees half a file
    return CandidateVersion(
        sha256=sha,
        path=str(path),
        version=version,
        parent_path=parent_path,
        parent_sha256=sha256_text(parent_source),
        config=config,
        changes=list(changes),
        diff=unified_diff(parent_source, text, Path(parent_path).name, f"{sha[:12]}/task.py"),
    )

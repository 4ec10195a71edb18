"""Name the trick of a launch that ran no Triton kernel: what its output is and where it came from.

"launch ran no Triton kernel" says what is missing, not what the candidate did instead. An LLM-written
candidate that returns `torch.empty_like(x)`, `torch.zeros_like(x)` or `x + y` (the reference's own op)
deserves a verdict naming that, so the failure classifier and the operator learn the right lesson. Used by
the compile worker (the static layer: no kernel to compile) and the honesty probe (micro layer).
`name_trick` is pure (arrays and aten op names in, one line out); `op_recorder` records the aten ops a
call runs (run inside a sandboxed worker: it is the candidate's code that runs under it).
"""

from __future__ import annotations

from typing import Any

# Aten ops that allocate, copy or re-view memory: Triton's interpreter and honest launchers run them, so
# they say nothing about who computed the answer (seen running examples/row_softmax.py interpreted:
# copy_, empty.memory_format, empty_like, new_empty, set_.source_Storage*).
BENIGN_OPS = (
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "copy_", "set_", "_to_copy",
    "to", "clone", "detach", "view", "_unsafe_view", "as_strided", "alias", "contiguous", "lift_fresh",
    "resize_", "t", "transpose", "permute", "expand", "slice", "select", "unsqueeze", "squeeze", "reshape",
    "_reshape_alias", "zero_", "fill_", "zeros", "zeros_like", "full", "full_like", "ones", "ones_like",
    "arange", "split", "unbind", "stride", "size",
)
ALLOC_OPS = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")
FILL_OPS = ("zero_", "fill_", "zeros", "zeros_like", "full", "full_like", "ones", "ones_like")


def compute_ops(ops: set[str]) -> set[str]:
    """The ops that computed something (aten names without the `aten.` prefix)."""
    return {o.removeprefix("aten.") for o in ops} - set(BENIGN_OPS)


def name_trick(outputs: list[Any] | None, ops: set[str], ref_ops: set[str],
               raw_ops: set[str] | None = None) -> str:
    """One line naming where a launch's output came from when no Triton kernel ran.

    `outputs`: the outputs as numpy arrays (None when not read); `ops`: the aten ops the launch ran (benign
    ones may be included); `ref_ops`: those of reference(); `raw_ops`: every aten op including allocations
    and fills, when recorded (tells an unwritten `torch.empty` from `torch.zeros` without poisoned memory).
    """
    import numpy as np

    computed, ref = compute_ops(ops), compute_ops(ref_ops)
    if ref and ref <= computed:
        return (f"reference called: launch computes its output with the reference's own torch ops "
                f"({', '.join(sorted('aten.' + o for o in ref))}), not with a Triton kernel")
    arrays = [np.asarray(a) for a in outputs or []]
    floats = [a for a in arrays if a.size and np.issubdtype(a.dtype, np.floating)]
    if floats and all(np.isnan(a).all() for a in floats):
        return ("empty/uninitialised output: every value is NaN (freed memory was poisoned), so launch never "
                "wrote its output")
    raw = {o.removeprefix("aten.") for o in raw_ops} if raw_ops is not None else None
    if raw is not None and not computed and raw & set(ALLOC_OPS) and not raw & set(FILL_OPS):
        return "empty/uninitialised output: launch allocates its output (torch.empty*) and never writes it"
    nonempty = [a for a in arrays if a.size]
    if nonempty and all(bool((a == a.flat[0]).all()) for a in nonempty):
        values = sorted({f"{a.flat[0].item():g}" for a in nonempty})
        return f"constant output: every element is {', '.join(values)} whatever the input"
    if computed:
        return f"no Triton kernel: the output comes from torch ops {', '.join(sorted('aten.' + o for o in computed))}"
    return "no Triton kernel and no computation: the output is an allocation, a copy or a view of an input"


def op_recorder() -> Any:
    """A dispatch mode recording the aten ops run under it, and which storages a compute op wrote:
    `computed_by(t)` names the compute op whose result `t`'s memory holds (carried through copies and
    views; cleared by a fresh allocation, or by a fill or copy of untouched data over the whole storage),
    None when no torch op computed it (a Triton kernel wrote it, or nothing did)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def storage(t: Any) -> tuple[int, int] | None:
        try:
            st = t.untyped_storage()
            return (st.data_ptr(), st.nbytes()) if st.data_ptr() else None
        except (RuntimeError, NotImplementedError):  # meta or otherwise storage-less tensors
            return None

    def whole(t: Any) -> bool:
        s = storage(t)
        return s is not None and t.storage_offset() == 0 and t.is_contiguous() and t.numel() * t.element_size() == s[1]

    def tensors(value: Any) -> list[Any]:
        if isinstance(value, torch.Tensor):
            return [value]
        if isinstance(value, (tuple, list)):
            return [v for v in value if isinstance(v, torch.Tensor)]
        return []

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: set[str] = set()
            self.raw: set[str] = set()
            self.computed: dict[int, str] = {}  # storage address -> the compute op whose result it holds

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            name = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
            self.raw.add(f"aten.{name}")
            if name not in BENIGN_OPS:
                self.ops.add(f"aten.{name}")
            out = func(*args, **(kwargs or {}))
            self._track(name, list(args), kwargs or {}, out)
            return out

        def _track(self, name: str, args: list[Any], kwargs: dict[str, Any], out: Any) -> None:
            results = tensors(out)
            if name not in BENIGN_OPS:  # results, an in-place op's self and an out= tensor hold its values
                written = results + tensors(kwargs.get("out"))
                if name.endswith("_") and args and isinstance(args[0], torch.Tensor):
                    written.append(args[0])
                for t in written:
                    if (s := storage(t)) is not None:
                        self.computed[s[0]] = name
                return
            if name in ALLOC_OPS or name in FILL_OPS or name == "copy_":
                src = args[1] if name == "copy_" and len(args) > 1 else None
                origin = self.computed_by(src) if isinstance(src, torch.Tensor) else None
                for t in (results or args[:1]) if name != "copy_" else args[:1]:
                    if (s := storage(t)) is None:
                        continue
                    if origin:
                        self.computed[s[0]] = origin
                    elif name in ALLOC_OPS or whole(t):
                        self.computed.pop(s[0], None)
                return
            origin = next((o for a in args if isinstance(a, torch.Tensor) and (o := self.computed_by(a))), None)
            for t in results if origin else []:  # a view or copy of computed data holds it too
                if (s := storage(t)) is not None:
                    self.computed[s[0]] = origin

        def computed_by(self, t: Any) -> str | None:
            s = storage(t)
            return self.computed.get(s[0]) if s is not None else None

    return Recorder()

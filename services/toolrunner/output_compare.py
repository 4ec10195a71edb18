"""Compare one candidate output array with the reference's: error norms, mismatches, NaN/Inf. Pure numpy.

The pass rule is `torch.allclose(candidate, reference, atol, rtol)`: |c - r| <= atol + rtol * |r|
elementwise, except that a NaN or an infinity matches only the same value at the same place in the
reference (allclose's own rule, with equal_nan=True: a kernel that reproduces the reference's NaNs is
correct, one that introduces a NaN is not). Integer and bool outputs must be equal.
"""

from __future__ import annotations

import numpy as np

from shared.tools.run import OutputComparison

# How many mismatching indices to list: enough to see a pattern (a tail, a stride) without a wall of text.
FIRST_MISMATCHES = 5


def compare_arrays(index: int, candidate: np.ndarray, reference: np.ndarray, atol: float, rtol: float,
                   *, candidate_dtype: str | None = None, reference_dtype: str | None = None,
                   ) -> OutputComparison:
    """Compare `candidate` with `reference`; dtype names default to the arrays' own (pass torch's when
    the arrays were widened for storage, e.g. bfloat16 saved as float32)."""
    c_dtype = candidate_dtype or str(candidate.dtype)
    r_dtype = reference_dtype or str(reference.dtype)
    exact = not (np.issubdtype(reference.dtype, np.floating) or np.issubdtype(reference.dtype, np.complexfloating))
    if exact:
        atol = rtol = 0.0
    base = {"index": index, "shape": list(reference.shape), "dtype": r_dtype, "candidate_shape": list(candidate.shape),
                "candidate_dtype": c_dtype, "numel": int(reference.size), "atol": atol, "rtol": rtol}
    if candidate.shape != reference.shape:
        return OutputComparison(**base, max_abs_err=None, max_rel_err=None, mismatches=int(reference.size),
                                passed=False, reason=f"shape {list(candidate.shape)} != reference "
                                                     f"{list(reference.shape)}")
    c = candidate.astype(np.float64, copy=False)
    r = reference.astype(np.float64, copy=False)
    nan_c, nan_r = np.isnan(c), np.isnan(r)
    inf_c, inf_r = np.isinf(c), np.isinf(r)
    finite = ~(nan_c | nan_r | inf_c | inf_r)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(c - r)
        close = finite & (diff <= atol + rtol * np.abs(r))
    # Non-finite values match only their own kind at the same place.
    close |= nan_c & nan_r
    close |= inf_c & inf_r & (c == r)
    bad = ~close
    n_bad = int(bad.sum())
    fin_diff = diff[finite]
    max_abs = float(fin_diff.max()) if fin_diff.size else None
    nz = finite & (r != 0)
    max_rel = float((diff[nz] / np.abs(r[nz])).max()) if nz.any() else None
    first = [[int(i) for i in idx] for idx in np.argwhere(bad)[:FIRST_MISMATCHES]]
    reason = ""
    passed = n_bad == 0
    if c_dtype != r_dtype:
        # A silently changed output precision is one of the ways to cheat (GPU.md); never a pass.
        passed = False
        reason = f"dtype {c_dtype} != reference {r_dtype}"
    return OutputComparison(**base, max_abs_err=max_abs, max_rel_err=max_rel, mismatches=n_bad,
                            first_mismatches=first, nan_candidate=int(nan_c.sum()),
                            inf_candidate=int(inf_c.sum()), nan_reference=int(nan_r.sum()),
                            inf_reference=int(inf_r.sum()), passed=passed, reason=reason)


def describe_failure(cmp: OutputComparison) -> str:
    """One line for a failed comparison, the way an engineer would say it."""
    if cmp.reason:
        return f"output {cmp.index}: {cmp.reason}"
    parts = [f"output {cmp.index}: {cmp.mismatches}/{cmp.numel} mismatches"]
    if cmp.max_abs_err is not None:
        parts.append(f"max abs err {cmp.max_abs_err:.3g} (atol {cmp.atol:g}, rtol {cmp.rtol:g})")
    if cmp.nan_candidate != cmp.nan_reference:
        parts.append(f"{cmp.nan_candidate} NaN (reference {cmp.nan_reference})")
    if cmp.inf_candidate != cmp.inf_reference:
        parts.append(f"{cmp.inf_candidate} Inf (reference {cmp.inf_reference})")
    if cmp.first_mismatches:
        parts.append(f"first at {cmp.first_mismatches[0]}")
    return ", ".join(parts)

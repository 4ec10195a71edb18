"""The review: accept a candidate the verifier passed only when nothing in its evidence chain contradicts it.

The verifier measures; the critic asks whether the measurements can be true and whether the chain that
led to them is whole. A candidate is rejected when
- a funnel layer failed, is missing, or was skipped where it must run (static and micro always; full only
  where there is no GPU, which gives a *proposed* patch: correct, speed not measured);
- its speedup is beyond the roofline: the task's FLOPs and bytes at the benchmarked shape over the H200's
  measured ceilings (4.35 TB/s copy, 784 TFLOP/s bf16 dense, GPU.md) give the shortest possible time,
  and a faster candidate did less work than the task asks (a cheat or a broken benchmark);
- it lowers precision against the task's policy ("exact": fp32 stays fp32; "allow_tf32": tf32 in dots);
- an annotation on the chain says "needs human review";
- a causation id does not resolve, or the chain does not start at a trigger.

Verdict measurement names the review reads (the verifier's `full` verdict, services/verifier/full_checks):
`speedup` (baseline median / candidate median, `low`/`high` = its bootstrap CI), `baseline_median_ms`,
`candidate_median_ms` (or `baseline_ms`/`candidate_ms`), `roofline_ms` (the verifier's least possible time),
optionally `tflops`, `tbytes_per_s`, and the task's formulas at the benchmarked shape as `flops` and
`bytes_moved` when the caller has no TaskBounds. A verdict with `needs_review` set is a hazard.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from services.critic.chain import LAYERS, Chain
from shared.gpu_facts import H200, GpuFacts
from shared.messages import Candidate, ChangeDescription, JobUpdate, Layer, Measurement, Verdict

SPEEDUP = "speedup"
BASELINE_MS = ("baseline_median_ms", "baseline_ms")
CANDIDATE_MS = ("candidate_median_ms", "candidate_ms")
ROOFLINE_MS = "roofline_ms"
TFLOPS = "tflops"
TBYTES_PER_S = "tbytes_per_s"
FLOPS = "flops"
BYTES_MOVED = "bytes_moved"

NO_GPU = "no GPU"
HUMAN_REVIEW = "needs human review"
# Naive Triton add/softmax/transpose reach 3.9-4.4 TB/s on the H200 (GPU.md), so the 4.35 TB/s "ceiling"
# is itself exceeded by ~1 %; 5 % headroom keeps a kernel at the roof from being called a cheat while a
# kernel that skips work (2x or more beyond) is still caught.
ROOF_MARGIN = 0.05

Precision = Literal["exact", "allow_tf32"]
# "verified": a speedup measured on the target device whose CI clears the policy; "proposed": correct
# (static and micro passed) but not measured there, so nothing may apply it as a verified change.
Status = Literal["verified", "proposed", "rejected"]


class TaskBounds(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What the review needs from the task: its formulas at the benchmarked shape and its policies."""

    flops: float | None = None
    bytes_moved: float | None = None
    precision: Precision | None = None  # None: unknown, reviewed as "exact" (the strict policy)
    dtype: str = ""  # "float32", "float16", "bfloat16"; "" = unknown
    source: str = ""  # where these came from, for the report


class RooflineCheck(msgspec.Struct, kw_only=True):
    checked: bool
    note: str
    floor_s: float | None = None  # the shortest time the task's work can take on the device
    baseline_s: float | None = None
    candidate_s: float | None = None
    max_speedup: float | None = None  # baseline_s / floor_s
    intensity: float | None = None  # FLOP / byte
    achieved_flops_per_s: float | None = None
    achieved_bytes_per_s: float | None = None
    peak_flops_per_s: float
    peak_bytes_per_s: float


class Decision(msgspec.Struct, kw_only=True):
    accepted: bool
    status: Status
    reasons: list[str]
    layer: Layer  # the funnel layer a rejection is charged to (failure records)
    speedup: Measurement
    roofline: RooflineCheck
    not_verified: str = ""  # why a proposed (accepted, unmeasured) candidate is not verified


def review(chain: Chain, bounds: TaskBounds | None = None, gpu: GpuFacts = H200) -> Decision:
    """Decide on the candidate whose chain this is. Pure: every input is in the arguments."""
    reasons: list[str] = list(chain.unresolved) + list(chain.problems)
    layer: Layer = "full"
    c = chain.candidate
    if c is None and not any("candidate" in r for r in reasons):
        reasons.append("the chain holds no candidate")
    for v in chain.verdicts.values():
        if c is not None and v.kernel != c.kernel:
            reasons.append(f"verdict {v.id} is for kernel {v.kernel!r}, the candidate is {c.kernel!r}")

    layer_reasons, layer = _layers(chain.verdicts, layer)
    reasons += layer_reasons
    full = chain.verdicts.get("full")
    speedup = _speedup(full)
    bounds = _merge(bounds, bounds_from_verdicts(list(chain.verdicts.values())))
    roof = roofline_check(full, speedup, bounds, gpu)
    if roof.checked and roof.note.startswith("beyond"):
        reasons.append(roof.note)
    if c is not None:
        reasons += precision_violations(c, bounds)
    reasons += hazards(chain)

    if reasons:
        return Decision(accepted=False, status="rejected", reasons=reasons, layer=layer, speedup=speedup,
                        roofline=roof)
    why = unmeasured_reason(full, speedup)
    return Decision(accepted=True, status="proposed" if why else "verified", reasons=[], layer=layer,
                    speedup=speedup, roofline=roof, not_verified=why)


def unmeasured_reason(full: Verdict | None, speedup: Measurement) -> str:
    """Why an accepted chain is only proposed ("" when its speedup was measured on a GPU with a CI)."""
    if speedup.value is None:
        return f"speedup not measured: {speedup.not_measured or NO_GPU}"
    device = full.provenance.device if full is not None else "none"
    if not device or device.startswith("none"):
        return f"speedup {speedup.value:g} was not measured on a GPU (device {device!r})"
    if speedup.low is None:
        return f"speedup {speedup.value:g} has no confidence interval"
    return ""


def _layers(verdicts: dict[str, Verdict], layer: Layer) -> tuple[list[str], Layer]:
    reasons: list[str] = []
    for name in LAYERS:
        v = verdicts.get(name)
        if v is None:
            reasons.append(f"missing layer: no {name} verdict for this candidate")
            continue
        why = "; ".join(v.reasons) or "no reason given"
        if v.status == "fail":
            reasons.append(f"verifier: {name} layer failed: {why}")
            layer = v.layer
        elif v.status == "skipped" and name != "full":
            reasons.append(f"{name} layer skipped ({why}): correctness is not established")
            layer = v.layer
        elif v.status == "skipped" and not _says_no_gpu(v):
            reasons.append(f"full layer skipped for a reason other than no GPU: {why}")
    full = verdicts.get("full")
    if full is not None and full.status == "pass":
        s = _speedup(full)
        if s.value is None:
            reasons.append("full layer passed without a speedup measurement")
        elif (s.low if s.low is not None else s.value) <= 1.0:
            reasons.append(f"full layer passed but the speedup {s.value:g} (low {s.low}) is not above 1: "
                           "the gain is within the noise")
    return reasons, layer


def _says_no_gpu(v: Verdict) -> bool:
    texts = v.reasons + [m.not_measured or "" for m in v.measurements]
    return any(NO_GPU.lower() in t.lower() for t in texts)


def _measurement(v: Verdict | None, name: str) -> Measurement | None:
    if v is None:
        return None
    return next((m for m in v.measurements if m.name == name), None)


def _speedup(full: Verdict | None) -> Measurement:
    m = _measurement(full, SPEEDUP)
    if m is not None:
        return m
    if full is None:
        why = "no full verdict"
    else:
        why = NO_GPU if _says_no_gpu(full) else "the full verdict carries no speedup"
    return Measurement(name=SPEEDUP, unit="x", not_measured=why)


def _value(v: Verdict | None, *names: str) -> float | None:
    for name in names:
        m = _measurement(v, name)
        if m is not None and m.value is not None:
            return m.value
    return None


def bounds_from_verdicts(verdicts: list[Verdict]) -> TaskBounds:
    """Task formulas some verdict carries as measurements (`flops`, `bytes_moved`)."""
    flops = next((x for v in verdicts if (x := _value(v, FLOPS)) is not None), None)
    nbytes = next((x for v in verdicts if (x := _value(v, BYTES_MOVED)) is not None), None)
    return TaskBounds(flops=flops, bytes_moved=nbytes, source="verdict measurements")


def _merge(first: TaskBounds | None, second: TaskBounds) -> TaskBounds:
    if first is None:
        return second
    return TaskBounds(flops=first.flops if first.flops is not None else second.flops,
                      bytes_moved=first.bytes_moved if first.bytes_moved is not None else second.bytes_moved,
                      precision=first.precision, dtype=first.dtype, source=first.source)


def roofline_check(full: Verdict | None, speedup: Measurement, bounds: TaskBounds,
                   gpu: GpuFacts = H200) -> RooflineCheck:
    """Is the measured time at or above the shortest time the task's work can take?

    The bf16 dense ceiling bounds every dtype (fp32 and tf32 peaks are lower), so the bound is loose for
    fp32 and never rejects a true gain.
    """
    peak_f, peak_b = gpu.bf16_dense_flops.value, gpu.copy_bandwidth.value
    base = _ms(_value(full, *BASELINE_MS))
    cand = _ms(_value(full, *CANDIDATE_MS))
    if cand is None and base is not None and speedup.value:
        cand = base / speedup.value
    out = RooflineCheck(checked=False, note="", baseline_s=base, candidate_s=cand, peak_flops_per_s=peak_f,
                        peak_bytes_per_s=peak_b)
    tflops, tbytes = _value(full, TFLOPS), _value(full, TBYTES_PER_S)
    beyond: list[str] = []
    if tflops is not None and tflops * 1e12 > peak_f * (1 + ROOF_MARGIN):
        beyond.append(f"{tflops:g} TFLOP/s > {peak_f / 1e12:g} TFLOP/s ceiling")
    if tbytes is not None and tbytes * 1e12 > peak_b * (1 + ROOF_MARGIN):
        beyond.append(f"{tbytes:g} TB/s > {peak_b / 1e12:g} TB/s ceiling")
    f, b = bounds.flops, bounds.bytes_moved
    verifier_floor = _ms(_value(full, ROOFLINE_MS))
    if f is None and b is None and verifier_floor is None:
        out.note = "not checked: the task's FLOP/byte formulas are unknown"
    else:
        out.floor_s = max((f or 0.0) / peak_f, (b or 0.0) / peak_b, verifier_floor or 0.0)
        out.intensity = f / b if f is not None and b else None
        if cand:
            out.achieved_flops_per_s = f / cand if f is not None else None
            out.achieved_bytes_per_s = b / cand if b is not None else None
        if speedup.value is None:
            out.note = f"not checked: speedup not measured ({speedup.not_measured or NO_GPU})"
        elif out.floor_s <= 0:
            out.note = "not checked: the task's formulas give zero work"
        elif base is not None and base * (1 + ROOF_MARGIN) < out.floor_s:
            # the original itself runs below the floor: the formulas overstate the work (H200 r52, a
            # captured output counted as read), so the floor says nothing about the candidate
            out.note = (f"not checked: the baseline {base * 1e3:.4g} ms is itself below the roofline floor "
                        f"{out.floor_s * 1e3:.4g} ms: the task's flops/bytes_moved overstate the work")
        else:
            out.checked = True
            if base is not None:
                out.max_speedup = base / out.floor_s
                low = speedup.low if speedup.low is not None else speedup.value
                if low > out.max_speedup * (1 + ROOF_MARGIN):
                    beyond.append(f"speedup {low:g} (CI low) > {out.max_speedup:.3g}, the most the roofline "
                                  f"allows from a {base * 1e3:.4g} ms baseline")
            if cand is not None and cand * (1 + ROOF_MARGIN) < out.floor_s:
                beyond.append(f"candidate time {cand * 1e3:.4g} ms < roofline floor "
                              f"{out.floor_s * 1e3:.4g} ms")
            if base is None and cand is None:
                out.checked = False
                out.note = "not checked: the verdict has no baseline or candidate time"
    if beyond:
        out.checked = True
        out.note = "beyond the roofline: " + "; ".join(beyond)
    elif out.checked:
        out.note = f"within the roofline (floor {out.floor_s * 1e3:.4g} ms)"  # type: ignore[operator]
    return out


def _ms(x: float | None) -> float | None:
    return x / 1e3 if x is not None else None


# ---------------------------------------------------------------- precision policy

# Lower-precision dtypes a source edit can introduce, with their mantissa bits (fp32 has 23).
_LOW_DTYPES: tuple[tuple[str, int, str], ...] = (
    (r"\b(?:tl|torch)\.float8\w*|\bfp8\b|\bfloat8\w*", 3, "fp8"),
    (r"\b(?:tl|torch)\.bfloat16\b|\.bfloat16\(\)|\bbf16\b", 7, "bfloat16"),
    (r"\b(?:tl|torch)\.float16\b|\btorch\.half\b|\.half\(\)|\bfp16\b|\b__half\b", 10, "float16"),
)
_MANTISSA = {"float32": 23, "float16": 10, "bfloat16": 7}
_TF32 = re.compile(r"tf32|allow_tf32\s*=\s*True|input_precision\s*=\s*['\"]tf32", re.IGNORECASE)


def precision_violations(c: Candidate, bounds: TaskBounds) -> list[str]:
    """Changes that lower precision beyond what the task's policy allows."""
    policy = bounds.precision or "exact"
    assumed = "" if bounds.precision else " (policy unknown, reviewed as exact)"
    task_bits = _MANTISSA.get(bounds.dtype)
    out: list[str] = []
    for ch in c.changes:
        new, old = _change_text(ch)
        where = f"{ch.change} {ch.target}".strip()
        if len(_TF32.findall(new)) > len(_TF32.findall(old)) and policy != "allow_tf32":
            out.append(f"precision: {where} enables tf32, which the task's policy {policy!r}{assumed} "
                       "forbids")
        for pattern, bits, name in _LOW_DTYPES:
            if len(re.findall(pattern, new)) <= len(re.findall(pattern, old)):
                continue
            if task_bits is None:
                out.append(f"precision: {where} introduces {name} and the task's dtype is unknown, so the "
                           "change cannot be shown to keep precision (publish the task's dtype)")
            elif bits < task_bits:
                out.append(f"precision: {where} introduces {name}, below the task's {bounds.dtype}; the "
                           f"policy {policy!r}{assumed} keeps {bounds.dtype} precision")
    return out


def _change_text(ch: ChangeDescription) -> tuple[str, str]:
    if ch.change == "source_edit":
        return ch.replace, ch.search
    return f"{ch.target}={ch.value}", ""


def hazards(chain: Chain) -> list[str]:
    """An annotation anywhere on the chain saying the change needs human review vetoes it."""
    notes: list[tuple[str, str]] = []
    for msg in chain.path + list(chain.verdicts.values()):
        if isinstance(msg, Candidate):
            notes += [(f"candidate {msg.id}", ch.rationale) for ch in msg.changes]
        elif isinstance(msg, Verdict):
            notes += [(f"{msg.layer} verdict {msg.id}", r) for r in msg.reasons]
            if msg.needs_review and not any(HUMAN_REVIEW in r.lower() for r in msg.reasons):
                where = "; ".join(msg.annotations[:3]) or "no lines given"
                notes.append((f"{msg.layer} verdict {msg.id}", f"{HUMAN_REVIEW} (flagged): {where}"))
        elif isinstance(msg, JobUpdate):
            notes.append((f"job update {msg.id}", msg.note))
    return [f"hazard: {who} says {text!r}" for who, text in notes if HUMAN_REVIEW in text.lower()]

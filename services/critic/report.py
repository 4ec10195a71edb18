"""The verified patch's report: Markdown, and one self-contained HTML page with inline SVG plots.

Two plots: the speedup of every candidate of the job by iteration (with its confidence interval), and the
roofline (the H200's measured copy and bf16 ceilings) with the kernel's point. Nothing is drawn that was not
measured: an unmeasured speedup is a hollow marker labelled "not measured", and without a time the
roofline shows only where the kernel's arithmetic intensity lies.
"""

from __future__ import annotations

import math
from html import escape

import msgspec

from services.critic.review import Decision
from shared.messages import Candidate, EvidenceLink, Measurement

W, H, PAD = 520, 300, 48  # plot size in px, and the margin that holds the axis labels


class IterationPoint(msgspec.Struct, kw_only=True):
    version: int
    candidate_id: str
    speedup: Measurement | None
    current: bool = False


def speedup_text(m: Measurement | None) -> str:
    if m is None or m.value is None:
        return f"not measured: {m.not_measured if m and m.not_measured else 'no GPU'}"
    ci = f" (95% CI {m.low:.3g}-{m.high:.3g})" if m.low is not None and m.high is not None else ""
    return f"{m.value:.3g}x{ci}"


def title(d: Decision) -> str:
    return "Proposed patch (not verified)" if d.status == "proposed" else "Verified patch"


def _roofline_lines(d: Decision) -> list[str]:
    r = d.roofline
    out = [f"Roofline: {r.note}"]
    if r.floor_s is not None:
        out.append(f"Roofline floor {r.floor_s * 1e3:.4g} ms (ceilings {r.peak_bytes_per_s / 1e12:g} TB/s "
                   f"copy, {r.peak_flops_per_s / 1e12:g} TFLOP/s bf16, GPU.md, measured)")
    if r.max_speedup is not None:
        out.append(f"Largest speedup the roofline allows: {r.max_speedup:.3g}x")
    return out


def render_md(c: Candidate, links: list[EvidenceLink], d: Decision, points: list[IterationPoint]) -> str:
    lines = [f"# {title(d)}: {c.kernel} v{c.version}", "",
             f"- Status: {d.status}", f"- Candidate: `{c.id}` (job `{c.job_id}`)",
             f"- Speedup: {speedup_text(d.speedup)}"]
    if d.not_verified:
        lines.append(f"- Not verified: {d.not_verified}; time it on the target GPU to verify it")
    lines += [f"- {x}" for x in _roofline_lines(d)]
    lines += ["", "## Evidence chain", "", "| step | message | summary |", "|---|---|---|"]
    lines += [f"| {ln.step} | `{ln.message_id}` | {ln.summary.replace('|', '/')} |" for ln in links]
    lines += ["", "## Change", ""]
    lines += [f"- `{k}` = `{v}`" for k, v in sorted(c.config.items())] or ["- (no config)"]
    lines += ["", "```diff", c.diff.rstrip(), "```", "", "## Iterations", "",
              "| version | candidate | speedup |", "|---|---|---|"]
    lines += [f"| v{p.version}{' (this)' if p.current else ''} | `{p.candidate_id}` | "
              f"{speedup_text(p.speedup)} |" for p in points]
    return "\n".join(lines) + "\n"


def render_html(c: Candidate, links: list[EvidenceLink], d: Decision, points: list[IterationPoint]) -> str:
    rows = "".join(f"<tr><td>{escape(ln.step)}</td><td><code>{escape(ln.message_id)}</code></td>"
                   f"<td>{escape(ln.summary)}</td></tr>" for ln in links)
    config = "".join(f"<li><code>{escape(k)}</code> = <code>{escape(str(v))}</code></li>"
                     for k, v in sorted(c.config.items())) or "<li>(no config)</li>"
    roof = "".join(f"<li>{escape(x)}</li>" for x in _roofline_lines(d))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(c.kernel)} v{c.version}: {escape(title(d))}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}
td,th{{border:1px solid #ccc;padding:.2em .5em;vertical-align:top}}table{{border-collapse:collapse}}
pre{{background:#f4f4f4;padding:.5em;overflow:auto}}
svg text{{font-size:11px}}</style></head><body>
<h1>{escape(title(d))}: {escape(c.kernel)} v{c.version}</h1>
<ul><li>Status: {escape(d.status)}{escape(f" ({d.not_verified})" if d.not_verified else "")}</li><li>Candidate: <code>{escape(c.id)}</code>
(job <code>{escape(str(c.job_id))}</code>)</li><li>Speedup: {escape(speedup_text(d.speedup))}</li>{roof}</ul>
<h2>Speedup per iteration</h2>{speedup_svg(points)}
<h2>Roofline</h2>{roofline_svg(d)}
<h2>Evidence chain</h2><table><tr><th>step</th><th>message</th><th>summary</th></tr>{rows}</table>
<h2>Change</h2><ul>{config}</ul><pre>{escape(c.diff)}</pre>
</body></html>
"""


def _svg(body: str, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'role="img" aria-label="{escape(title)}"><rect width="{W}" height="{H}" fill="white"/>'
            f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - 10}" y2="{H - PAD}" stroke="black"/>'
            f'<line x1="{PAD}" y1="10" x2="{PAD}" y2="{H - PAD}" stroke="black"/>{body}</svg>')


def speedup_svg(points: list[IterationPoint]) -> str:
    measured = [p.speedup for p in points if p.speedup is not None and p.speedup.value is not None]
    top = max([1.0] + [(m.high if m.high is not None else m.value) or 0.0 for m in measured]) * 1.15
    n = max(len(points), 1)

    def x(i: int) -> float:
        return PAD + (i + 0.5) * (W - PAD - 10) / n

    def y(v: float) -> float:
        return H - PAD - v / top * (H - PAD - 10)

    body = [(f'<line x1="{PAD}" y1="{y(1):.1f}" x2="{W - 10}" y2="{y(1):.1f}" stroke="#999" '
            'stroke-dasharray="4"/>'),
            f'<text x="{PAD - 4}" y="{y(1) + 4:.1f}" text-anchor="end">1x</text>',
            f'<text x="{PAD - 4}" y="{y(top / 1.15) + 4:.1f}" text-anchor="end">{top / 1.15:.3g}x</text>',
            f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">candidate version</text>']
    for i, p in enumerate(points):
        m, cx = p.speedup, x(i)
        color = "#c00" if p.current else "#246"
        body.append(f'<text x="{cx:.1f}" y="{H - PAD + 14}" text-anchor="middle">v{p.version}</text>')
        if m is None or m.value is None:
            body.append(f'<circle cx="{cx:.1f}" cy="{y(1):.1f}" r="5" fill="none" stroke="{color}"/>'
                        f'<text x="{cx:.1f}" y="{y(1) - 9:.1f}" text-anchor="middle">not measured</text>')
            continue
        if m.low is not None and m.high is not None:
            body.append(f'<line x1="{cx:.1f}" y1="{y(m.low):.1f}" x2="{cx:.1f}" y2="{y(m.high):.1f}" '
                        f'stroke="{color}"/>')
        body.append(f'<circle cx="{cx:.1f}" cy="{y(m.value):.1f}" r="4" fill="{color}"/>'
                    f'<text x="{cx + 7:.1f}" y="{y(m.value) - 5:.1f}">{m.value:.3g}x</text>')
    if not points:
        body.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">no iterations recorded</text>')
    return _svg("".join(body), "speedup per iteration")


def roofline_svg(d: Decision) -> str:
    r = d.roofline
    pf, pb = r.peak_flops_per_s, r.peak_bytes_per_s
    i_lo, i_hi = -2.0, 4.0  # log10 FLOP/byte: 0.01 (a copy) .. 10^4 (a large GEMM)
    p_lo, p_hi = math.log10(pb * 10 ** i_lo) - 0.5, math.log10(pf) + 0.5

    def x(i: float) -> float:
        return PAD + (min(max(math.log10(i), i_lo), i_hi) - i_lo) / (i_hi - i_lo) * (W - PAD - 10)

    def y(p: float) -> float:
        return H - PAD - (math.log10(max(p, 1.0)) - p_lo) / (p_hi - p_lo) * (H - PAD - 10)

    ridge = pf / pb
    body = [(f'<polyline fill="none" stroke="#246" stroke-width="2" points="{x(10 ** i_lo):.1f},'
            f'{y(pb * 10 ** i_lo):.1f} {x(ridge):.1f},{y(pf):.1f} {x(10 ** i_hi):.1f},{y(pf):.1f}"/>'),
            f'<text x="{x(ridge) + 4:.1f}" y="{y(pf) - 6:.1f}">{pf / 1e12:g} TFLOP/s bf16 (measured)</text>',
            f'<text x="{x(0.05):.1f}" y="{y(pb * 0.05) - 8:.1f}">{pb / 1e12:g} TB/s copy (measured)</text>',
            (f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">arithmetic intensity (FLOP/byte, log)'
            '</text>'),
            (f'<text x="12" y="{H / 2}" transform="rotate(-90 12 {H / 2})" text-anchor="middle">'
            'FLOP/s (log)</text>')]
    for k in range(int(i_lo), int(i_hi) + 1):
        body.append(f'<text x="{x(10 ** k):.1f}" y="{H - PAD + 14}" text-anchor="middle">1e{k}</text>')
    if r.intensity is None:
        body.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">kernel not placed: the task\'s '
                    'FLOP/byte formulas are unknown</text>')
    elif r.intensity <= 0:
        bw = f"{r.achieved_bytes_per_s / 1e12:.3g} TB/s" if r.achieved_bytes_per_s else "time not measured"
        body.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">kernel does no FLOPs (pure data '
                    f'movement): {bw} of {pb / 1e12:g} TB/s</text>')
    elif r.achieved_flops_per_s:
        cx, cy = x(r.intensity), y(r.achieved_flops_per_s)
        body.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="#c00"/><text x="{cx + 8:.1f}" '
                    f'y="{cy + 4:.1f}">kernel {r.achieved_flops_per_s / 1e12:.3g} TFLOP/s</text>')
    else:
        cx = x(r.intensity)
        body.append(f'<line x1="{cx:.1f}" y1="10" x2="{cx:.1f}" y2="{H - PAD}" stroke="#c00" '
                    f'stroke-dasharray="4"/><text x="{cx + 4:.1f}" y="{H / 2}">kernel intensity '
                    f'{r.intensity:.3g}; time not measured: no GPU</text>')
    return _svg("".join(body), "roofline")

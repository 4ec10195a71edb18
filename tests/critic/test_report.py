from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from services.critic.chain import MessageIndex, build_chain
from services.critic.report import IterationPoint, render_html, render_md
from services.critic.review import TaskBounds, review

from .chains import MATMUL_BYTES, MATMUL_FLOPS, job

BOUNDS = TaskBounds(flops=MATMUL_FLOPS, bytes_moved=MATMUL_BYTES, precision="exact", dtype="bfloat16")


def rendered(j, bounds=BOUNDS):
    idx = MessageIndex()
    for m in j.messages:
        idx.add(m)
    chain = build_chain(j.verdicts[-1], idx)
    d = review(chain, bounds)
    points = [IterationPoint(version=1, candidate_id=j.candidate.id, speedup=d.speedup, current=True)]
    return chain, d, render_md(j.candidate, chain.links, d, points), render_html(j.candidate, chain.links, d,
                                                                                  points)


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.refs += [v or "" for k, v in attrs if k in ("src", "href")]


def test_the_html_page_is_self_contained_with_two_svg_plots_and_the_kernels_point() -> None:
    chain, _d, md, html = rendered(job())
    parser = _Refs()
    parser.feed(html)
    assert parser.refs == [] and "script" not in parser.tags and "link" not in parser.tags
    svgs = re.findall(r"<svg .*?</svg>", html, flags=re.DOTALL)
    assert len(svgs) == 2
    for svg in svgs:
        ET.fromstring(svg)  # well-formed XML
    assert "6.14x" in svgs[0]  # 546 / 89 TFLOP/s
    assert "kernel 546 TFLOP/s" in svgs[1]
    assert all(link.message_id in html for link in chain.links)
    assert "## Evidence chain" in md and "- Speedup: 6.14x" in md and "```diff" in md


def test_without_a_gpu_the_report_says_not_measured_and_draws_no_point() -> None:
    _, _d, md, html = rendered(job(full="skipped"))
    assert "- Speedup: not measured: no GPU" in md and "- Status: proposed" in md
    assert md.startswith("# Proposed patch (not verified)") and "- Not verified: speedup not measured" in md
    svgs = re.findall(r"<svg .*?</svg>", html, flags=re.DOTALL)
    assert "not measured" in svgs[0]
    assert "time not measured: no GPU" in svgs[1] and "TFLOP/s</text>" not in svgs[1].split("kernel")[-1]


def test_a_task_without_formulas_gets_a_roofline_without_the_kernel() -> None:
    _, _, _, html = rendered(job(), bounds=None)
    assert "kernel not placed: the task's FLOP/byte formulas are unknown" in html

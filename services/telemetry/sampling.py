"""Choosing the device sampler and running it on a timer.

`open_sampler` picks DcgmScraper when a dcgm-exporter URL is given, else NvmlSampler when NVML sees a GPU,
else nothing (with the reason: the service then only processes samples others publish and never makes
any up). `sample_loop` calls the sampler every period off the event loop (NVML calls block) and hands
each RawSample to a callback.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import structlog

from services.telemetry.dcgm_scrape import DcgmScraper
from services.telemetry.nvml_sampler import NvmlSampler
from services.telemetry.records import RawSample, Sampler, SamplerUnavailable


def open_sampler(kind: str, node: str, dcgm_url: str = "") -> tuple[Sampler | None, str]:
    """(sampler or None, one line for health details). kind: auto | nvml | dcgm | none.
    node "": NVML samples carry the hostname, DCGM samples the exporter's Hostname label."""
    if kind == "none":
        return None, "none: disabled (--sampler none); only samples published on the bus are processed"
    if kind == "dcgm" or (kind == "auto" and dcgm_url):
        if not dcgm_url:
            raise ValueError("--sampler dcgm needs --dcgm URL (dcgm-exporter's /metrics endpoint)")
        return DcgmScraper(dcgm_url, node=node), f"dcgm: {dcgm_url}"
    try:
        s = NvmlSampler(node or socket.gethostname())
    except SamplerUnavailable as e:
        if kind == "nvml":
            raise
        return None, f"none: {e}"
    return s, f"nvml: {len(s.devices)} GPU(s) {', '.join(sorted({d.name for d in s.devices}))}"


async def sample_loop(
    sampler: Sampler,
    period_s: float,
    emit: Callable[[RawSample], Awaitable[None]],
    on_error: Callable[[str], None],
) -> None:
    """Sample every `period_s` on a fixed schedule (no drift); a late tick is skipped, not bunched."""
    log = structlog.get_logger().bind(part="sampler")
    loop = asyncio.get_running_loop()
    next_t = loop.time() + period_s
    while True:
        await asyncio.sleep(max(0.0, next_t - loop.time()))
        next_t += period_s
        if next_t < loop.time():  # the sampler took longer than a period: resynchronise
            next_t = loop.time() + period_s
        try:
            samples = await asyncio.to_thread(sampler.sample)
        except (SamplerUnavailable, ValueError) as e:  # exporter down, bad exposition: say so, try again
            on_error(str(e))
            log.warning("sampling failed", error=str(e))
            continue
        on_error("")
        for s in samples:
            await emit(s)

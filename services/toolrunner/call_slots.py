"""Where a tool call waits before it runs: the runner's CPU pool and one read-write lock per GPU.

- Compiles, static tools and the GPU tools that time nothing (`ToolSpec.shares_gpu`: correctness runs,
  honesty probes) take a slot of the CPU pool, sized to the cores this process may use
  (`os.sched_getaffinity`; `KPILOT_TOOL_CPU_POOL` overrides it).
- A GPU tool that times or profiles (`ToolSpec.needs_gpu`: bench, bench_ab, autotune, ncu_profile, sanitize)
  holds its GPU alone: the writer side of that GPU's lock. The sharing tools hold the reader side, so any
  number of them run beside each other but never while a timing is taken (a correctness run on the same
  GPU would be measured with it). A waiting writer goes first (aiorwlock), so timings are not starved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping

import aiorwlock

from shared.concurrency import cores, count_from_env

POOL_ENV = "KPILOT_TOOL_CPU_POOL"


def cpu_pool_size(env: Mapping[str, str]) -> int:
    """The number of CPU-bound tool calls one runner runs at once."""
    return count_from_env(env, POOL_ENV, cores(), "concurrent tool calls")


def gpu_index(args: object) -> int:
    """The GPU a call names (its `gpu` argument; 0 when it names none). A malformed value maps to 0 here:
    the executor's schema check refuses the call itself, this only picks the lock it waits on."""
    value = args.get("gpu", 0) if isinstance(args, dict) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class CallSlots:
    def __init__(self, cpu_pool: int) -> None:
        self.cpu_pool = cpu_pool
        self._pool = asyncio.Semaphore(cpu_pool)
        self._gpus: dict[int, aiorwlock.RWLock] = {}

    def _gpu(self, index: int) -> aiorwlock.RWLock:
        return self._gpus.setdefault(index, aiorwlock.RWLock())

    @contextlib.asynccontextmanager
    async def hold(self, *, times_gpu: bool, shares_gpu: bool, gpu: int) -> AsyncIterator[None]:
        if times_gpu:
            async with self._gpu(gpu).writer_lock:
                yield
        elif shares_gpu:
            async with self._pool, self._gpu(gpu).reader_lock:
                yield
        else:
            async with self._pool:
                yield

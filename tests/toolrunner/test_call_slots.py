"""The toolrunner's call slots: a timing holds its GPU alone, correctness runs share it, the CPU pool bounds
the rest. Each test waits on the events that would show an overlap, never on a sleep."""

from __future__ import annotations

import asyncio

import pytest

from services.toolrunner.call_slots import POOL_ENV, CallSlots, cpu_pool_size, gpu_index


def test_pool_size_follows_env_or_cores() -> None:
    assert cpu_pool_size({POOL_ENV: "7"}) == 7
    assert cpu_pool_size({}) >= 1
    for bad in ("0", "-1", "two"):
        with pytest.raises(ValueError, match=POOL_ENV):
            cpu_pool_size({POOL_ENV: bad})


def test_gpu_index_of_args() -> None:
    assert gpu_index({"gpu": 3}) == 3
    assert gpu_index({}) == 0
    assert gpu_index({"gpu": "1"}) == 0 and gpu_index({"gpu": True}) == 0 and gpu_index({"gpu": -2}) == 0
    assert gpu_index(None) == 0


async def test_sharing_calls_run_together_and_a_timing_waits_for_them() -> None:
    slots = CallSlots(cpu_pool=4)
    inside, release = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def correctness(tag: str, ready: asyncio.Event) -> None:
        async with slots.hold(times_gpu=False, shares_gpu=True, gpu=0):
            order.append(f"{tag} in")
            ready.set()
            await release.wait()
            order.append(f"{tag} out")

    async def timing() -> None:
        async with slots.hold(times_gpu=True, shares_gpu=False, gpu=0):
            order.append("timing in")

    a_in, b_in = asyncio.Event(), asyncio.Event()
    a = asyncio.create_task(correctness("a", a_in))
    b = asyncio.create_task(correctness("b", b_in))
    await a_in.wait()
    await b_in.wait()  # both correctness runs hold the GPU at once
    t = asyncio.create_task(timing())
    other_gpu = asyncio.create_task(_timed_on(slots, 1, inside))
    await inside.wait()  # a timing on another GPU is not held up
    assert "timing in" not in order
    release.set()
    await asyncio.gather(a, b, t, other_gpu)
    assert order.index("timing in") > max(order.index("a out"), order.index("b out"))


async def _timed_on(slots: CallSlots, gpu: int, inside: asyncio.Event) -> None:
    async with slots.hold(times_gpu=True, shares_gpu=False, gpu=gpu):
        inside.set()


async def test_a_waiting_timing_goes_before_later_sharing_calls() -> None:
    slots = CallSlots(cpu_pool=4)
    release, first_in = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def first() -> None:
        async with slots.hold(times_gpu=False, shares_gpu=True, gpu=0):
            first_in.set()
            await release.wait()

    async def timing() -> None:
        async with slots.hold(times_gpu=True, shares_gpu=False, gpu=0):
            order.append("timing")

    async def late() -> None:
        async with slots.hold(times_gpu=False, shares_gpu=True, gpu=0):
            order.append("late")

    f = asyncio.create_task(first())
    await first_in.wait()
    t = asyncio.create_task(timing())
    # the timing is queued: aiorwlock 1.5 has no public view of its waiters (pinned <2 in pyproject.toml)
    while not slots._gpus[0]._writer_lock._lock._write_waiters:
        await asyncio.sleep(0)
    lt = asyncio.create_task(late())
    release.set()
    await asyncio.gather(f, t, lt)
    assert order == ["timing", "late"]


async def test_cpu_pool_bounds_plain_calls() -> None:
    slots = CallSlots(cpu_pool=1)
    first_in, release = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def call(tag: str, wait: bool) -> None:
        async with slots.hold(times_gpu=False, shares_gpu=False, gpu=0):
            order.append(f"{tag} in")
            if wait:
                first_in.set()
                await release.wait()
            order.append(f"{tag} out")

    a = asyncio.create_task(call("a", True))
    await first_in.wait()
    b = asyncio.create_task(call("b", False))
    for _ in range(20):  # b gets every chance to run; it must not enter while a holds the only slot
        await asyncio.sleep(0)
    assert order == ["a in"]
    release.set()
    await asyncio.gather(a, b)
    assert order == ["a in", "a out", "b in", "b out"]

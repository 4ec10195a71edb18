"""`PlannerIO` bound to the bus: decomposer and tools by request/reply, candidates and job updates by
JetStream publish, job state in the `jobs` KV bucket (one key per job)."""

from __future__ import annotations

import time
from typing import Any

import msgspec
import nats.js.errors
import structlog
from nats.js.kv import KeyValue

from services.planner import jobs
from shared.bus import Bus, BusError
from shared.messages import Candidate, JobUpdate, ToolRequest, ToolResult
from shared.subjects import DECOMPOSER_ANALYZE, candidate_subject, job_subject, token
from shared.toolclient import BusToolClient
from shared.tools.decompose import Decomposition

SOURCE = "planner"
# A cold compile + ptxas + nvdisasm of a Hopper matmul takes 5-20 s on a 2-core runner; 120 s is slack for
# a queue of them, short enough that a dead decomposer does not stall a job for long.
ANALYZE_TIMEOUT_S = 120.0
TOOL_TIMEOUT_S = 300.0


class BusIO:
    def __init__(self, bus: Bus, jobs_kv: KeyValue, kernels_kv: KeyValue | None = None) -> None:
        self.bus = bus
        self.kv = jobs_kv
        self.kernels = kernels_kv
        self.tools = BusToolClient(bus, timeout_s=TOOL_TIMEOUT_S, source=SOURCE)
        self.log = structlog.get_logger().bind(service=SOURCE)

    async def analyze(self, task_path: str, config: dict[str, Any]) -> Decomposition | None:
        req = ToolRequest(source=SOURCE, tool="decompose", args={"task_path": task_path, "config": config})
        try:
            r = await self.bus.request(DECOMPOSER_ANALYZE, req, ToolResult, timeout_s=ANALYZE_TIMEOUT_S,
                                       responder="decomposer")
        except BusError as e:
            self.log.warning("no diagnosis: decomposer did not answer", error=str(e))
            return None
        if not r.ok or r.result is None:
            self.log.warning("no diagnosis", error=r.error.message if r.error else "empty result")
            return None
        try:
            return msgspec.convert(r.result, Decomposition)
        except msgspec.ValidationError as e:
            self.log.warning("decomposer answered an invalid decomposition", error=str(e))
            return None

    async def call_tool(self, name: str, args: dict[str, Any]) -> ToolResult:
        return await self.tools.call(name, args)

    async def publish_candidate(self, c: Candidate) -> None:
        await self.bus.publish(candidate_subject(c.kernel), c)

    async def publish_update(self, u: JobUpdate) -> None:
        await self.bus.publish(job_subject(u.job_id or "_"), u)

    async def save(self, s: jobs.JobState) -> None:
        await self.kv.put(s.job_id, jobs.encode_state(s))

    async def load_all(self) -> list[jobs.JobState]:
        try:
            keys = await self.kv.keys()
        except nats.js.errors.NoKeysError:
            return []
        out = []
        for k in keys:
            entry = await self.kv.get(k)
            if entry.value:
                try:
                    out.append(jobs.decode_state(entry.value))
                except msgspec.DecodeError as e:
                    self.log.warning("unreadable job state skipped", key=k, error=str(e))
        return out

    async def task_for(self, kernel: str) -> str | None:
        """The registered task of a kernel: `kernels` KV value {"task_path": ...} or a bare path."""
        if self.kernels is None:
            return None
        try:
            entry = await self.kernels.get(token(kernel))
        except nats.js.errors.KeyNotFoundError:
            return None
        raw = (entry.value or b"").decode()
        try:
            data = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return raw.strip() or None
        return data.get("task_path") if isinstance(data, dict) else (data if isinstance(data, str) else None)

    def now(self) -> float:
        return time.time()

"""Has a candidate's job ended? Then the verifier withdraws the candidate instead of verifying it.

The planner owns jobs and publishes every change of one as a JobUpdate on `jobs.<job_id>` (JOBS stream);
the last one says whether the job is still open. A job that ended (budget, convergence, roofline, cancel)
never reopens, so an ended job is remembered and not looked up again. Looking the job up costs one
JetStream direct get per layer of a candidate (~1 ms here); verifying a withdrawn candidate would cost its
funnel: ~30 s of interpreter correctness on CPU, minutes of GPU timing on the H200 (issue 17: a job whose
budget ran out kept the verifier busy for five more minutes).
"""

from __future__ import annotations

from collections import OrderedDict

import msgspec
import nats.errors
import nats.js.errors

from shared.bus import Bus
from shared.messages import JOB_ENDED, JobUpdate
from shared.subjects import job_subject, stream_for

MAX_REMEMBERED = 4096  # ended jobs kept; a stack runs a few jobs per kernel per hour


def ended_reason(update: JobUpdate | None) -> str | None:
    """Why the job of this last update has ended, or None while it is open (or unknown). Pure."""
    if update is None or update.status not in JOB_ENDED:
        return None
    why = update.reasons[-1] if update.reasons else update.note
    return f"job {update.job_id} ended ({update.status}{': ' + why if why else ''})"


class JobWatch:
    """`await watch.ended(job_id)`: the reason the job ended, or None while it is open."""

    def __init__(self, bus: Bus, limit: int = MAX_REMEMBERED) -> None:
        self.bus, self.limit = bus, limit
        self._ended: OrderedDict[str, str] = OrderedDict()

    async def ended(self, job_id: str | None) -> str | None:
        if not job_id:
            return None  # a candidate outside any job (`kpilot verify` on the bus): never withdrawn
        if job_id in self._ended:
            return self._ended[job_id]
        why = ended_reason(await self._last_update(job_id))
        if why is not None:
            self._ended[job_id] = why
            while len(self._ended) > self.limit:
                self._ended.popitem(last=False)
        return why

    async def _last_update(self, job_id: str) -> JobUpdate | None:
        subject = job_subject(job_id)
        try:
            raw = await self.bus.js.get_last_msg(stream_for(subject).name, subject)
        except (nats.js.errors.NotFoundError, nats.errors.TimeoutError):
            return None  # no update yet (or the lookup timed out): verify, as before jobs could end
        try:
            return msgspec.json.decode(raw.data or b"", type=JobUpdate)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

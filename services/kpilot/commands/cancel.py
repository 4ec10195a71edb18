"""kpilot cancel JOB: ask the planner, which owns jobs, to end a job; its queued candidates are withdrawn.

The request is a CancelRequest on `optimize.cancel` (JOBS stream, so a planner restarting meanwhile still
gets it). The command then waits for the job's `cancelled` update. A job that already ended is left as it
is; a job the bus has never heard of is an error that says where to find job ids.
"""

from __future__ import annotations

import argparse
import asyncio

from services.kpilot.commands.common import nats_arg

EXIT_CANCELLED, EXIT_ERROR = 0, 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cancel", help="end a job now; the verifier withdraws its queued candidates")
    nats_arg(p)
    p.add_argument("job", help="the job id (`kpilot optimize` prints it; `kpilot tail 'jobs.>' --since 1h`)")
    p.add_argument("--reason", default="cancelled by the operator", help="recorded in the job's update")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the planner's answer")
    p.set_defaults(func=_cancel)


def _cancel(args: argparse.Namespace) -> int:
    code, text = asyncio.run(cancel_job(args.nats, args.job, args.reason, args.timeout))
    print(text)
    return code


async def cancel_job(url: str, job_id: str, reason: str, timeout_s: float) -> tuple[int, str]:
    """(exit code, one line saying what happened)."""
    import msgspec
    import nats.js.errors

    from shared.bus import Bus
    from shared.messages import JOB_ENDED, CancelRequest, JobUpdate
    from shared.subjects import OPTIMIZE_CANCEL, job_subject, stream_for

    subject = job_subject(job_id)
    bus = await Bus.connect(url, "kpilot")
    try:
        try:
            last = await bus.js.get_last_msg(stream_for(subject).name, subject)
        except nats.js.errors.NotFoundError:
            return EXIT_ERROR, (f"no job {job_id} on the bus: list job ids with "
                                f"`kpilot tail 'jobs.>' --since 1h --nats {url}`")
        update = msgspec.json.decode(last.data or b"", type=JobUpdate)
        if update.status in JOB_ENDED:
            return EXIT_CANCELLED, f"job {job_id} had already ended: {update.status} ({'; '.join(update.reasons)})"
        ended: asyncio.Future[JobUpdate] = asyncio.get_running_loop().create_future()

        async def on_update(raw) -> None:  # type: ignore[no-untyped-def]
            try:
                u = msgspec.json.decode(raw.data, type=JobUpdate)
            except (msgspec.DecodeError, msgspec.ValidationError):
                return
            if u.status in JOB_ENDED and not ended.done():
                ended.set_result(u)

        sub = await bus.nc.subscribe(subject, cb=on_update)
        try:
            await bus.publish(OPTIMIZE_CANCEL, CancelRequest(source="kpilot", job_id=job_id, reason=reason))
            try:
                u = await asyncio.wait_for(ended, timeout_s)
            except TimeoutError:
                return EXIT_ERROR, (f"job {job_id}: the planner did not answer the cancel within "
                                    f"{timeout_s:.0f} s (is it up? `kpilot status`); the request stays queued")
        finally:
            await sub.unsubscribe()
    finally:
        await bus.close()
    if u.status == "cancelled":
        return EXIT_CANCELLED, f"job {job_id} cancelled; its queued candidates are withdrawn from the verifier"
    return EXIT_CANCELLED, f"job {job_id} ended before the cancel took effect: {u.status}"

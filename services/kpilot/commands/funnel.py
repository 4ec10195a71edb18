"""kpilot funnel [--job J] [--since D] [--json]: how many candidates each verifier layer stopped, and
the GPU seconds each layer spent, per job and overall (from the VERDICTS stream)."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC

from services.kpilot.commands.common import nats_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("funnel", help="verifier funnel accounting per job and overall")
    nats_arg(p)
    p.add_argument("--job", default="", help="only this job")
    p.add_argument("--since", default="24h", help="how far back to read verdicts (default 24h)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_funnel)


def _funnel(args: argparse.Namespace) -> int:
    import msgspec

    from services.kpilot.observe import parse_duration
    from services.verifier.accounting import funnel_report
    verdicts = asyncio.run(_read(args.nats, parse_duration(args.since)))
    if args.job:
        verdicts = [v for v in verdicts if v.job_id == args.job]
    report = funnel_report(verdicts)
    if args.json:
        print(json.dumps(msgspec.to_builtins(report), indent=2))
        return 0
    for name, stats in [("overall", report.overall), *sorted(report.jobs.items())]:
        print(f"{name or '(no job)'}: {stats.candidates} candidates, {stats.accepted} accepted, "
              f"{stats.unmeasured} unmeasured (no GPU), {stats.withdrawn} withdrawn (job ended), "
              f"{stats.gpu_seconds:.1f} GPU s")
        for c in stats.layers:
            print(f"    {c.layer:<7} reached {c.reached:>3}  stopped {c.stopped:>3}  passed {c.passed:>3}  "
                  f"skipped {c.skipped:>3}  GPU s {c.gpu_seconds:8.1f}")
    return 0


async def _read(url: str, since):  # type: ignore[no-untyped-def]
    from datetime import datetime

    import nats.errors
    from nats.js.api import ConsumerConfig, DeliverPolicy

    from shared.bus import Bus
    from shared.messages import Verdict, decode
    bus = await Bus.connect(url, "kpilot")
    out: list[Verdict] = []
    try:
        start = datetime.now(UTC) - since
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start)
        sub = await bus.js.subscribe("verdicts.>", stream="VERDICTS", ordered_consumer=True, config=config)
        while True:
            try:
                msg = await sub.next_msg(timeout=1.0)
            except nats.errors.TimeoutError:
                break
            v = decode(msg.data, Verdict)
            out.append(v)  # type: ignore[arg-type]
        await sub.unsubscribe()
    finally:
        await bus.close()
    return out

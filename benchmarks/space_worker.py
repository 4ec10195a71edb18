"""Worker (run through sandbox.run_worker, CPU): a task's SPACE expanded over CONFIG and filtered by its
`constraint` on one named shape. The constraint is task code, so it runs here, not in the caller."""

from __future__ import annotations

from typing import Any

import msgspec


class SpaceJob(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    shape: str = "full"


class SpaceResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    space_size: int  # the full product of SPACE's lists
    configs: list[dict[str, Any]]  # those the constraint accepts, in itertools.product order


def main() -> None:
    import math

    from services.toolrunner.task_runtime import import_task
    from services.toolrunner.tools.autotune.config_space import expand
    from services.toolrunner.worker_lib.io import read_request, write_result
    from services.toolrunner.worker_lib.task_call import resolve_shape

    job = read_request(SpaceJob)
    module = import_task(job.task_path)
    space = dict(getattr(module, "SPACE", {}) or {})
    configs = expand(
        dict(getattr(module, "CONFIG", {}) or {}),
        space,
        getattr(module, "constraint", None),
        resolve_shape(module, job.shape),
    )
    write_result(SpaceResult(space_size=math.prod(len(v) for v in space.values()), configs=configs))


if __name__ == "__main__":
    main()

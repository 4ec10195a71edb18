"""Persistent programs: a kernel launched with one program per tile (`t = tl.program_id(0)`) runs on
at most PROGRAMS programs that stride over the tiles (`for t in range(program_id, tiles, num_programs)`),
so the launch is one wave (132 SMs on the H200, GPU.md) and the per-program set-up is paid once per
program instead of once per tile. The config search tunes PROGRAMS (1, 2 or 4 waves of 132).

Precondition: as rows_per_program: `t = tl.program_id(0)` at the kernel's top level, no other axis-0 id
or count, no return, launch grids tuple literals.
"""

from __future__ import annotations

from shared.gpu_facts import H200

SMS = int(H200.sm_count.value)  # 132 (GPU.md)
from shared.messages import Scalar
from shared.transforms.base import Param, Transform, TransformSpec
from shared.transforms.rows_per_program import program_loop

SPEC = TransformSpec(
    name="persistent",
    summary="at most PROGRAMS persistent programs striding over the tiles (one wave over the SMs)",
    answers=["tail_effect", "launch_bound_tiny_kernel", "achieved_occupancy_gap", "latency_bound"],
    params=[Param(name="programs", domain=[SMS, 2 * SMS, 4 * SMS], default=SMS,
                  constexpr="PROGRAMS", doc="programs launched: 1, 2 or 4 per SM of the H200")],
    precondition="`t = tl.program_id(0)` at the kernel's top level, no other axis-0 id, no return",
)


def rewrite(source: str, params: dict[str, Scalar], kernel_name: str) -> str:
    return program_loop(
        source, kernel_name, "persistent", "PROGRAMS", params["programs"], SPEC.params[0].domain,
        lambda sub, r, knob, count: (f"for {sub} in tl.range(tl.program_id(0), {count}, tl.num_programs(0)):\n"
                                     f"    {r} = {sub}\n"
                                     f"    pass\n"),
        lambda g0, knob: f"min({g0}, {knob})")


TRANSFORM = Transform(spec=SPEC, rewrite=rewrite)

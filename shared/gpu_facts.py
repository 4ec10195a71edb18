"""Device facts the static tools (launch_config, roofline bounds) compute from, each with its source.

Only numbers someone measured or a vendor/tool document states are here; `source` names which. Check
them against the device on the first GPU run (`torch.cuda.get_device_properties`, ncu's
`launch__*` / `device__attribute_*` rows): the H200 ncu fixture already agrees on SM count, block,
warp, register and shared-memory limits (shared/fixtures/h200-probe/ncu_raw.csv).
"""

from __future__ import annotations

import msgspec


class Fact(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    value: float
    unit: str
    source: str


class GpuFacts(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    arch: str  # Triton target, e.g. "cuda:90"
    sm_count: Fact
    max_warps_per_sm: Fact
    max_threads_per_sm: Fact
    max_blocks_per_sm: Fact
    max_threads_per_block: Fact
    registers_per_sm: Fact
    register_subpartitions: Fact  # register file is split among this many schedulers (SMSPs)
    max_registers_per_thread: Fact
    register_alloc_unit: Fact  # registers per warp are allocated in multiples of this
    shared_per_sm: Fact  # the largest carveout
    shared_per_block_optin: Fact
    shared_reserved_per_block: Fact  # the driver's share of every block's shared memory
    shared_alloc_unit: Fact
    shared_carveouts: tuple[int, ...]  # the carveout sizes the driver may pick, bytes
    l2_bytes: Fact
    hbm_bytes: Fact
    copy_bandwidth: Fact  # measured ceiling for a streaming kernel
    bf16_dense_flops: Fact  # measured ceiling


_GPU_MD = "GPU.md (H200 facts table)"
_NCU_FIXTURE = "ncu H200 probe 2026-12-01 (shared/fixtures/h200-probe/ncu_raw.csv)"
_CUDA_GUIDE = "CUDA C Programming Guide, compute capability 9.0 technical specifications"

H200 = GpuFacts(
    name="NVIDIA H200",
    arch="cuda:90",
    sm_count=Fact(value=132, unit="SM", source=f"{_GPU_MD}; {_NCU_FIXTURE}: launch__sm_count = 132"),
    max_warps_per_sm=Fact(value=64, unit="warp", source=_GPU_MD),
    max_threads_per_sm=Fact(value=2048, unit="thread", source=_GPU_MD),
    max_blocks_per_sm=Fact(
        value=32, unit="block", source=f"{_GPU_MD}; {_NCU_FIXTURE}: launch__occupancy_limit_blocks = 32"
    ),
    max_threads_per_block=Fact(value=1024, unit="thread", source=_CUDA_GUIDE),
    registers_per_sm=Fact(value=65536, unit="register", source=_GPU_MD),
    register_subpartitions=Fact(
        value=4, unit="SMSP", source=f"{_GPU_MD} occupancy formula (4 x 16384 registers)"
    ),
    max_registers_per_thread=Fact(value=255, unit="register", source=_GPU_MD),
    register_alloc_unit=Fact(
        value=256,
        unit="register/warp",
        source=f"{_GPU_MD} formula roundup(R * 32, 256); {_NCU_FIXTURE}: 44 -> 48 registers/thread allocated",
    ),
    shared_per_sm=Fact(value=233472, unit="byte", source=f"{_GPU_MD}: 228 KB shared per SM"),
    shared_per_block_optin=Fact(value=232448, unit="byte", source=f"{_GPU_MD}: 227 KB per block opt-in"),
    shared_reserved_per_block=Fact(
        value=1024, unit="byte", source=f"{_GPU_MD}; {_NCU_FIXTURE}: launch__shared_mem_per_block_driver"
    ),
    shared_alloc_unit=Fact(value=128, unit="byte", source=f"{_GPU_MD} formula roundup(S + 1024, 128)"),
    # KB: 0, 8, 16, 32, 64, 100, 132, 164, 196, 228 (CUDA guide, cudaFuncAttributePreferredSharedMemory-
    # Carveout for cc 9.0); the ncu fixture saw 32 KB and 132 KB chosen by the driver.
    shared_carveouts=tuple(k * 1024 for k in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)),
    l2_bytes=Fact(
        value=62914560,
        unit="byte",
        source=f"{_NCU_FIXTURE}: device__attribute_l2_cache_size (60 MiB; GPU.md: 60 MB)",
    ),
    hbm_bytes=Fact(value=143e9, unit="byte", source=_GPU_MD),
    copy_bandwidth=Fact(value=4.35e12, unit="byte/s", source=f"{_GPU_MD} (measured, torch.add 2^28 fp32)"),
    bf16_dense_flops=Fact(value=784e12, unit="flop/s", source=f"{_GPU_MD} (measured, torch.matmul 8192^3)"),
)

GPUS: dict[str, GpuFacts] = {"H200": H200}


def gpu_facts(name: str) -> GpuFacts:
    """Facts for a device by short name; a name we hold no facts for gets the list of those we do."""
    try:
        return GPUS[name]
    except KeyError:
        raise KeyError(
            f"no device facts for {name!r}: known devices are {', '.join(sorted(GPUS))} "
            "(add a GpuFacts record with sources in shared/gpu_facts.py)"
        ) from None

"""shared/gpu_facts.py's H200 record against the device attributes ncu recorded on the H200."""

from __future__ import annotations

from pathlib import Path

from shared.gpu_facts import H200, gpu_facts
from shared.parsers.ncu import parse_ncu_csv

NCU = Path(__file__).resolve().parents[1] / "fixtures" / "h200-probe" / "ncu_raw.csv"


def test_h200_facts_match_the_device_attributes() -> None:
    dev = parse_ncu_csv(NCU.read_text(), keep_device_attributes=True)[0].metrics
    attr = {k.removeprefix("device__attribute_"): v.value for k, v in dev.items()}
    assert attr["multiprocessor_count"] == H200.sm_count.value
    assert attr["max_warps_per_multiprocessor"] == H200.max_warps_per_sm.value
    assert attr["max_threads_per_multiprocessor"] == H200.max_threads_per_sm.value
    assert attr["max_blocks_per_multiprocessor"] == H200.max_blocks_per_sm.value
    assert attr["max_threads_per_block"] == H200.max_threads_per_block.value
    assert attr["max_registers_per_multiprocessor"] == H200.registers_per_sm.value
    assert attr["max_shared_memory_per_multiprocessor"] == H200.shared_per_sm.value
    assert attr["max_shared_memory_per_block_optin"] == H200.shared_per_block_optin.value
    assert attr["reserved_shared_memory_per_block"] == H200.shared_reserved_per_block.value
    assert attr["l2_cache_size"] == H200.l2_bytes.value
    assert H200.shared_per_sm.value in H200.shared_carveouts


def test_every_fact_names_its_source() -> None:
    for name in H200.__struct_fields__:
        f = getattr(H200, name)
        if hasattr(f, "source"):
            assert f.source, name


def test_unknown_device_lists_known_ones() -> None:
    assert gpu_facts("H200") is H200
    try:
        gpu_facts("A100")
    except KeyError as e:
        assert "H200" in str(e)
    else:
        raise AssertionError("A100 has no facts record yet")

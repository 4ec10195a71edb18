"""Which tensors a captured kernel reads (services/kpilot/capture/reads.py), and the captured task's
bytes_moved built from it: an output the kernel only stores to is counted once.

TEST INPUT: the four kernels of liger-kernel 0.8.5 and fla-core 0.6.0 that H200 run r52 captured
(their raw capture record, benchmarks/results/runs/r52/); small kernels written here for the rule's edges
(block pointers, tensor descriptors, atomics, jit helpers, a gather, a pointer passed somewhere unknown)."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from services.kpilot.capture.reads import read_params
from services.kpilot.capture.records import Capture
from services.kpilot.capture.taskgen import write_tasks

ROOT = Path(__file__).resolve().parents[2]
R52 = ROOT / "benchmarks/results/runs/r52/steps/i21_oss/capture/raw/capture.json"


def _captured() -> dict[str, tuple[list[list[str]], list[str]]]:
    cap = msgspec.json.decode(R52.read_bytes(), type=Capture)
    out = {}
    for k in cap.kernels:
        tensors = [a.name for a in k.variants[0].args if a.kind == "tensor"]
        out[k.name] = (k.source.functions, tensors)
    return out


@pytest.mark.parametrize(("kernel", "read"), [
    ("_swiglu_forward_kernel", {"a_ptr", "b_ptr"}),  # c_ptr: stored to only
    ("_rms_norm_forward_kernel", {"X_ptr", "W_ptr"}),  # Y_ptr, RSTD_ptr: outputs
    ("layer_norm_fwd_kernel_row", {"x", "w", "b"}),  # y, mean, rstd: outputs
    ("l2norm_fwd_kernel_row", {"x"}),
])
def test_real_captured_kernels_read_their_inputs_only(kernel: str, read: set[str]) -> None:
    functions, tensors = _captured()[kernel]
    assert read_params(functions, tensors) == read


def test_written_task_counts_an_output_once(tmp_path: Path) -> None:
    """r52's swiglu task: 3 tensors of 4096 x 11008 fp16, a and b read, c written: 3 x 90.2 MB, not 4."""
    write_tasks(R52, tmp_path, 4, 0.0)
    text = (tmp_path / "_swiglu_forward_kernel_task.py").read_text()
    line = re.search(r"def bytes_moved\(shape\):\n(.*)", text).group(1)  # type: ignore[union-attr]
    assert f"float({3 * 4096 * 11008 * 2})" in line and "c_ptr written" in line


def _reads(src: str, *helpers: str) -> set[str] | None:
    """The kernel's `*_ptr` parameters it reads (the capture asks about its tensor arguments only)."""
    fns = [[re.match(r"def (\w+)", s).group(1), s] for s in (src, *helpers)]  # type: ignore[union-attr]
    params = re.match(r"def \w+\(([^)]*)\)", src).group(1)  # type: ignore[union-attr]
    return read_params(fns, [p.strip() for p in params.split(",") if p.strip().endswith("_ptr")])


def test_block_pointer_and_descriptor_loads_are_reads() -> None:
    src = '''def k(a_ptr, d_ptr, o_ptr, n):
    bp = tl.make_block_ptr(base=a_ptr, shape=(n,), strides=(1,), offsets=(0,), block_shape=(64,), order=(0,))
    bp = tl.advance(bp, (64,))
    desc = tl.make_tensor_descriptor(d_ptr, shape=[n], strides=[1], block_shape=[64])
    x = tl.load(bp) + desc.load([0])
    ob = tl.make_block_ptr(base=o_ptr, shape=(n,), strides=(1,), offsets=(0,), block_shape=(64,), order=(0,))
    tl.store(ob, x)
'''
    assert _reads(src) == {"a_ptr", "d_ptr"}


def test_atomics_read_and_a_loaded_value_is_not_a_pointer() -> None:
    src = '''def k(idx_ptr, x_ptr, acc_ptr, out_ptr, n):
    i = tl.load(idx_ptr + tl.arange(0, 64))
    v = tl.load(x_ptr + i)
    tl.atomic_add(acc_ptr, tl.sum(v))
    tl.store(out_ptr + i, v.to(out_ptr.dtype.element_ty))
'''
    assert _reads(src) == {"idx_ptr", "x_ptr", "acc_ptr"}


def test_helpers_are_followed_and_unknown_calls_count_as_reads() -> None:
    src = '''def k(a_ptr, o_ptr, p_ptr, n):
    x = _load_row(a_ptr, n)
    _store_row(o_ptr, x, n)
    mystery(p_ptr)
'''
    load = '''def _load_row(ptr, n):
    return tl.load(ptr + tl.arange(0, 64))
'''
    store = '''def _store_row(dst, val, n):
    tl.store(dst + tl.arange(0, 64), val)
'''
    assert _reads(src, load, store) == {"a_ptr", "p_ptr"}


def test_in_place_update_is_read_and_written() -> None:
    src = '''def k(x_ptr, n):
    x_ptr += tl.program_id(0) * n
    tl.store(x_ptr + tl.arange(0, 64), tl.load(x_ptr + tl.arange(0, 64)) * 2)
'''
    assert _reads(src) == {"x_ptr"}


def test_unparsable_source_is_unknown() -> None:
    assert read_params([["k", "def k(x:\n"]], ["x"]) is None

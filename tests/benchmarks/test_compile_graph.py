"""compile_graph.py on CPU: what dynamo hands torch.compile for a task's eager baseline (real traces of
the real task files; nothing here is timed)."""

from __future__ import annotations

import pytest

from benchmarks import compile_graph


def test_jagged_attention_is_one_graph_with_two_matmuls_per_sequence() -> None:
    rec = compile_graph.explain("l4_jagged_attention", "micro", [])
    assert rec.shape["b"] == 3 and rec.graphs == 1 and rec.graph_breaks == 0
    assert rec.matmuls == 2 * 3  # Q K^T and P V for each of the 3 sequences
    assert 2 <= rec.distinct_matmul_shapes <= rec.matmuls


def test_set_keeps_the_sequence_count_and_it_scales_the_matmuls() -> None:
    rec = compile_graph.explain("l4_jagged_attention", "micro", ["b=5", "h=1"])
    assert rec.shape["b"] == 5 and rec.shape["h"] == 1
    assert rec.matmuls == 2 * 5


def test_a_dense_gemm_is_one_matmul() -> None:
    rec = compile_graph.explain("l2_matmul_square", "micro", [])
    assert (rec.graphs, rec.matmuls, rec.distinct_matmul_shapes) == (1, 1, 1)


def test_bad_input_names_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, said in (
        (
            ["--task", "l4_jagged_attention", "--set", "x=1"],
            "--set 'x=1': expected KEY=INT with KEY one of b, d, h, s",
        ),
        (["--task", "l4_jagged_attention", "--set", "b=two"], "'two' is not an integer; e.g. --set b=1"),
        (["--task", "l4_jagged_attention", "--shape", "edge"], "--shape 'edge': use micro or full"),
        (["--task", "no_such_task"], "no_such_task"),
    ):
        with pytest.raises(SystemExit) as e:
            compile_graph.main(argv)
        assert e.value.code == 2
        assert said in capsys.readouterr().err

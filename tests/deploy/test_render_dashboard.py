"""benchmarks/render_dashboard.py's PromQL evaluation over recorded scrapes (what the committed picture of
the dashboard shows), on scrapes with known answers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import promql_parser as pq
import pytest

from benchmarks import render_dashboard as rd


def _write(path: Path, rows: list[tuple[float, list[dict[str, object]]]]) -> Path:
    with gzip.open(path, "wt") as fh:
        for t, samples in rows:
            fh.write(json.dumps({"t": t, "samples": samples}) + "\n")
    return path


def _counter(name: str, value: float, **labels: str) -> dict[str, object]:
    return {"name": name, "labels": labels, "value": value}


def test_rate_increase_sum_by_and_matchers(tmp_path: Path) -> None:
    rows = [(float(t), [_counter("kpilot_candidates_total", 2.0 * t, layer="static", outcome="pass"),
                        _counter("kpilot_candidates_total", 1.0 * t, layer="micro", outcome="pass"),
                        _counter("kpilot_candidates_total", 5.0, layer="full", outcome="skipped")])
            for t in range(30)]
    store, _ = rd.load(_write(tmp_path / "s.jsonl.gz", rows))
    rate = rd.evaluate(pq.parse('sum by (layer) (rate(kpilot_candidates_total{outcome!="skipped"}[1m]))'),
                       store, 20.0)
    assert rate == {frozenset({("layer", "static")}): pytest.approx(2.0),
                    frozenset({("layer", "micro")}): pytest.approx(1.0)}
    inc = rd.evaluate(pq.parse("sum(increase(kpilot_candidates_total[1m]))"), store, 20.0)
    assert inc == {frozenset(): pytest.approx(3.0 * rd.RATE_WINDOW_S)}
    scaled = rd.evaluate(pq.parse('kpilot_candidates_total{layer=~"fu.*"} * 100'), store, 5.0)
    assert list(scaled.values()) == [500.0]


def test_histogram_quantile_interpolates_within_the_bucket(tmp_path: Path) -> None:
    def buckets(t: float) -> list[dict[str, object]]:  # 100 observations per second, all in (0.1, 0.5]
        return [_counter("kpilot_bus_lag_seconds_bucket", c * t, le=le, consumer="c")
                for le, c in (("0.1", 0.0), ("0.5", 100.0), ("+Inf", 100.0))]

    store, _ = rd.load(_write(tmp_path / "h.jsonl.gz", [(float(t), buckets(t)) for t in range(30)]))
    q = rd.evaluate(pq.parse("histogram_quantile(0.5, sum by (le, consumer) "
                             "(rate(kpilot_bus_lag_seconds_bucket[1m])))"), store, 20.0)
    assert q == {frozenset({("consumer", "c")}): pytest.approx(0.3)}  # halfway between 0.1 and 0.5

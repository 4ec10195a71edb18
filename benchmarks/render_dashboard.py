"""Render the panels of deploy/grafana/kernelpilot.json with real data, without Grafana.

Grafana is not on PyPI or in Debian's archive and nothing can be downloaded here, so the dashboard cannot
be rendered by Grafana on this machine. Instead: `record` starts a real stack (`kpilot up`), runs a CPU job
(examples/vector_add.py, rules policy) and a heartbeat, and scrapes every service's /metrics once a second
into a JSONL file (what Prometheus would store). `render` parses each panel's PromQL with promql-parser and
evaluates it over those scrapes (instant selectors, rate/increase over a window, sum by, histogram_quantile,
arithmetic with a number; `up` is 1 for each scrape that answered, as Prometheus records it), then draws the
panels at their grid positions with matplotlib. The picture is labelled NOT GRAFANA. Panels fed by
dcgm-exporter or prometheus-nats-exporter show "no data" here: neither runs on this CPU machine.

    python benchmarks/render_dashboard.py record --out benchmarks/results/dashboard/scrapes.jsonl.gz
    python benchmarks/render_dashboard.py render --scrapes benchmarks/results/dashboard/scrapes.jsonl.gz \
        --out deploy/grafana/kernelpilot.png
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

import promql_parser as pq
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy" / "grafana" / "kernelpilot.json"
RATE_WINDOW_S = 10.0  # $__rate_interval for 1 s scrapes

Labels = frozenset[tuple[str, str]]
Store = dict[str, dict[Labels, list[tuple[float, float]]]]


def _kpilot(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.kpilot", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


def dashboard_metrics() -> set[str]:
    """Every metric name the dashboard's queries select (only those are kept from each scrape)."""
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, pq.VectorSelector):
            names.add(node.name)
        for attr in ("args", "expr", "lhs", "rhs", "vector_selector"):
            child = getattr(node, attr, None)
            for c in child if isinstance(child, list) else [child]:
                if c is not None and not isinstance(c, (str, int, float)):
                    walk(c)

    for p in json.loads(DASHBOARD.read_text())["panels"]:
        for t in p["targets"]:
            walk(pq.parse(t["expr"].replace("$__rate_interval", "1m")))
    return names


def scrape_all(urls: dict[str, str], keep: set[str]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for url in urls.values():
        instance = url.split("//")[1].split("/")[0]
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                text = r.read().decode()
        except OSError:
            rows.append({"name": "up", "labels": {"job": "kernelpilot", "instance": instance}, "value": 0.0})
            continue
        rows.append({"name": "up", "labels": {"job": "kernelpilot", "instance": instance}, "value": 1.0})
        for fam in text_string_to_metric_families(text):
            rows += [{"name": s.name, "labels": {**s.labels, "job": "kernelpilot", "instance": instance},
                      "value": s.value} for s in fam.samples if s.name in keep]
    return rows


async def record(out: Path, job_timeout_s: float) -> None:
    from shared.bus import Bus
    from shared.ids import new_id
    from shared.messages import OptimizeRequest
    from shared.natsserver import free_port
    from shared.subjects import OPTIMIZE_REQUEST

    with tempfile.TemporaryDirectory() as tmp:
        port, state = free_port(), str(Path(tmp) / "state")
        up = await asyncio.to_thread(_kpilot, "up", "--detach", "--port", str(port), "--state-dir", state)
        if up.returncode != 0:
            raise SystemExit(f"kpilot up failed: {up.stderr}")
        url = f"nats://127.0.0.1:{port}"
        try:
            rows = json.loads((await asyncio.to_thread(_kpilot, "status", "--json", "--nats", url)).stdout)
            urls = {r["name"]: r["metrics_url"] for r in rows if r["kind"] == "service"}
            out.parent.mkdir(parents=True, exist_ok=True)
            keep = dashboard_metrics()
            with gzip.open(out, "wt") as fh:
                async def tick(t0: float) -> list[dict[str, object]]:
                    samples = await asyncio.to_thread(scrape_all, urls, keep)
                    fh.write(json.dumps({"t": time.time() - t0, "samples": samples}) + "\n")
                    return samples

                t0 = time.time()
                for _ in range(5):
                    await tick(t0)
                    await asyncio.sleep(1.0)
                await asyncio.to_thread(_kpilot, "heartbeat", "--nats", url)
                bus = await Bus.connect(url, "kpilot")
                req = OptimizeRequest(source="kpilot", task_path=str(ROOT / "examples/vector_add.py"),
                                      budget_s=120.0, max_candidates=3, policy="rules", job_id=f"job-{new_id()}")
                await bus.publish(OPTIMIZE_REQUEST, req)
                await bus.close()
                deadline, settled = time.monotonic() + job_timeout_s, None
                while time.monotonic() < deadline:
                    samples = await tick(t0)
                    patches = sum(float(s["value"]) for s in samples  # type: ignore[arg-type]
                                  if s["name"] == "kpilot_patches_total")
                    jobs_open = sum(float(s["value"]) for s in samples  # type: ignore[arg-type]
                                    if s["name"] == "kpilot_jobs" and s["labels"].get("state")  # type: ignore[union-attr]
                                    in ("open", "planning", "verifying"))
                    if patches >= 1 and jobs_open == 0:
                        settled = settled or time.monotonic()
                        if time.monotonic() - settled > 15:  # a tail after the job, for the rates to fall
                            break
                    await asyncio.sleep(1.0)
        finally:
            await asyncio.to_thread(_kpilot, "down", "--port", str(port), "--state-dir", state)


# ------------------------------------------------------------------ PromQL over the recorded scrapes


def load(path: Path) -> tuple[Store, list[float]]:
    store: Store = defaultdict(lambda: defaultdict(list))
    times = []
    with gzip.open(path, "rt") as fh:
        lines = fh.read().splitlines()
    for line in lines:
        row = json.loads(line)
        times.append(row["t"])
        for s in row["samples"]:
            store[s["name"]][frozenset(s["labels"].items())].append((row["t"], float(s["value"])))
    return store, times


def _matches(labels: Labels, matchers: object) -> bool:
    d = dict(labels)
    for m in matchers.matchers:  # type: ignore[attr-defined]
        v, op = d.get(m.name, ""), str(m.op)
        if (op.endswith("NotEqual") and v == m.value) or (op.endswith(".Equal") and v != m.value):
            return False
        if op.endswith("NotRe") and re.fullmatch(m.value, v):
            return False
        if op.endswith(".Re") and not re.fullmatch(m.value, v):
            return False
    return True


def _at(points: list[tuple[float, float]], t: float) -> float | None:
    best = None
    for pt, v in points:
        if pt <= t:
            best = v
        else:
            break
    return best


def evaluate(node: object, store: Store, t: float) -> dict[Labels, float]:
    if isinstance(node, pq.NumberLiteral):
        return {frozenset(): node.val}
    if isinstance(node, pq.VectorSelector):
        out = {}
        for labels, pts in store.get(node.name, {}).items():
            if _matches(labels, node.matchers) and (v := _at(pts, t)) is not None:
                out[labels] = v
        return out
    if isinstance(node, pq.ParenExpr):
        return evaluate(node.expr, store, t)
    if isinstance(node, pq.Call):
        name = node.func.name
        if name in ("rate", "increase"):
            ms = node.args[0]
            window = RATE_WINDOW_S
            now, before = evaluate(ms.vector_selector, store, t), evaluate(ms.vector_selector, store, t - window)
            out = {}
            for labels, v in now.items():
                delta = max(v - before.get(labels, 0.0), 0.0)
                out[frozenset((k, x) for k, x in labels if k != "__name__")] = \
                    delta / window if name == "rate" else delta
            return out
        if name == "histogram_quantile":
            q = node.args[0].val
            groups: dict[Labels, list[tuple[float, float]]] = defaultdict(list)
            for labels, v in evaluate(node.args[1], store, t).items():
                le = dict(labels).get("le")
                if le is not None:
                    groups[frozenset((k, x) for k, x in labels if k != "le")].append((float(le), v))
            out = {}
            for labels, buckets in groups.items():
                buckets.sort()
                total = buckets[-1][1]
                if total <= 0:
                    continue
                rank, prev_le, prev_c = q * total, 0.0, 0.0
                for le, c in buckets:
                    if c >= rank:
                        if le == float("inf"):
                            out[labels] = prev_le
                        else:
                            out[labels] = prev_le + (le - prev_le) * ((rank - prev_c) / max(c - prev_c, 1e-12))
                        break
                    prev_le, prev_c = le, c
            return out
        raise ValueError(f"function {name} is not evaluated by this renderer")
    if isinstance(node, pq.AggregateExpr):
        keep = set(node.modifier.labels) if node.modifier else set()
        out: dict[Labels, float] = defaultdict(float)
        for labels, v in evaluate(node.expr, store, t).items():
            out[frozenset((k, x) for k, x in labels if k in keep)] += v
        return dict(out)
    if isinstance(node, pq.BinaryExpr):
        lhs, rhs = evaluate(node.lhs, store, t), evaluate(node.rhs, store, t)
        op = str(node.op).strip()
        if frozenset() in rhs and len(rhs) == 1:
            k = rhs[frozenset()]
            return {lab: (v * k if op == "*" else v / k if op == "/" else v + k if op == "+" else v - k)
                    for lab, v in lhs.items()}
        raise ValueError(f"binary {op} between two vectors is not evaluated by this renderer")
    raise ValueError(f"{type(node).__name__} is not evaluated by this renderer")


def legend(fmt: str, labels: Labels) -> str:
    d = dict(labels)
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: d.get(m.group(1), ""), fmt).strip() or "value"


def render(scrapes: Path, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dash = json.loads(DASHBOARD.read_text())
    store, times = load(scrapes)
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dash["panels"])
    fig = plt.figure(figsize=(24, rows * 0.62))
    top = 0.95  # room for the NOT GRAFANA title
    fig.suptitle("NOT GRAFANA: the panels of deploy/grafana/kernelpilot.json, their PromQL evaluated by "
                 "benchmarks/render_dashboard.py\non /metrics scraped every 1 s from a real CPU run "
                 "(kpilot up, one vector_add job, heartbeat); x: seconds since the first scrape",
                 fontsize=13, color="darkred")
    for p in dash["panels"]:
        g = p["gridPos"]
        ax = fig.add_axes((g["x"] / 24 + 0.012, top * (1 - (g["y"] + g["h"]) / rows) + 0.012,
                           g["w"] / 24 - 0.024, top * g["h"] / rows * 0.78))
        ax.set_title(p["title"], fontsize=10, loc="left")
        drawn = 0
        if p["type"] in ("bargauge", "stat"):
            names, values = [], []
            for tgt in p["targets"]:
                expr = pq.parse(tgt["expr"].replace("$__rate_interval", "1m"))
                for labels, v in sorted(evaluate(expr, store, times[-1]).items(), key=lambda kv: str(kv[0])):
                    names.append(legend(tgt["legendFormat"], labels))
                    values.append(v)
            if names:
                ax.barh(range(len(names)), values, color="tab:green" if p["type"] == "stat" else "tab:blue",
                        alpha=0.6)
                for i, (name, v) in enumerate(zip(names, values, strict=True)):
                    ax.text(0, i, f" {name}: {v:g}", va="center", fontsize=8)
                ax.set_yticks([])
                ax.tick_params(labelsize=7)
                drawn = len(names)
        else:
            for tgt in p["targets"]:
                expr = pq.parse(tgt["expr"].replace("$__rate_interval", "1m"))
                series: dict[str, list[float]] = defaultdict(lambda: [float("nan")] * len(times))
                for i, t in enumerate(times):  # a series absent at a time is a gap, as in Grafana
                    for labels, v in evaluate(expr, store, t).items():
                        series[legend(tgt["legendFormat"], labels)][i] = v
                for name, ys in sorted(series.items()):
                    ax.plot(times, ys, label=name[:40], linewidth=1.2)
                    drawn += 1
            if drawn and "histogram_quantile" in " ".join(t["expr"] for t in p["targets"]):
                ax.set_yscale("log")
                ax.set_ylabel("s (log)", fontsize=7)
            if drawn:
                ax.legend(fontsize=6, loc="upper left", ncol=2)
            ax.tick_params(labelsize=7)
        if not drawn:
            source = "dcgm-exporter" if any("DCGM" in t["expr"] for t in p["targets"]) else \
                "prometheus-nats-exporter" if any(re.search(r"gnatsd_|jetstream_", t["expr"])
                                                  for t in p["targets"]) else "this run"
            ax.text(0.5, 0.5, f"no data: {source} did not produce these series on this CPU machine",
                    ha="center", va="center", fontsize=9, color="gray", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=70)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--job-timeout", type=float, default=400.0)
    d = sub.add_parser("render")
    d.add_argument("--scrapes", type=Path, required=True)
    d.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.cmd == "record":
        asyncio.run(record(args.out, args.job_timeout))
    else:
        render(args.scrapes, args.out)


if __name__ == "__main__":
    main()

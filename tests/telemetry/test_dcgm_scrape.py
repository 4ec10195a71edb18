from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from services.telemetry.dcgm_scrape import DcgmScraper, parse_exposition
from services.telemetry.records import SamplerUnavailable

FIXTURE = Path(__file__).parent / "fixtures" / "dcgm_exporter_2xh200.prom"


def test_parses_one_sample_per_gpu_with_labels() -> None:
    samples = parse_exposition(FIXTURE.read_text(), ts=100.0)
    assert [s.gpu for s in samples] == [
        "GPU-3f1c2a9e-7b44-4c1e-9a0d-5e2b8c7d6f01",
        "GPU-8a7e6d5c-4b3a-4291-8f7e-6d5c4b3a2910",
    ]
    assert {s.node for s in samples} == {"gpu-node-1"}
    assert {s.gpu_name for s in samples} == {"NVIDIA H200"}
    assert all(s.ts == 100.0 for s in samples)


def test_units_are_normalised_and_sources_name_the_field_id() -> None:
    g0 = parse_exposition(FIXTURE.read_text(), ts=0.0)[0]
    sm = g0.get("sm_active")
    assert sm is not None and sm.unit == "pct" and sm.source == "dcgm:1002"
    assert sm.value == pytest.approx(94.2587)  # ratio 0.942587 -> percent
    assert g0.value("tensor_core_util") == pytest.approx(11.3529)
    assert g0.value("dram_bandwidth") == pytest.approx(24.6118)
    assert g0.value("sm_clock") == 1980.0
    assert g0.value("power") == pytest.approx(412.517)
    assert g0.value("memory_used") == 36921.0
    # PCIe tx + rx bytes/s -> GB/s: (41203314 + 58796686) / 1e9
    assert g0.value("pcie_bw") == pytest.approx(0.1)


def test_clock_event_reasons_and_blank_values() -> None:
    g0, g1 = parse_exposition(FIXTURE.read_text(), ts=0.0)
    assert g0.clock_event_reasons == []
    assert g1.clock_event_reasons == ["sw_power_cap"]
    assert g1.value("nvlink_bw") is None  # RX is DCGM's int64 blank: absent, not a huge number
    reasons = {a.resource: a.reason for a in g1.absent}
    assert "blank value for DCGM_FI_PROF_NVLINK_RX_BYTES" in reasons["nvlink_bw"]
    assert g0.value("nvlink_bw") == 0.0  # a real zero stays a zero


def test_missing_fields_become_absent_with_the_fix() -> None:
    text = "\n".join(line for line in FIXTURE.read_text().splitlines() if "SM_OCCUPANCY" not in line)
    g0 = parse_exposition(text, ts=0.0)[0]
    assert g0.value("occupancy") is None
    (a,) = [a for a in g0.absent if a.resource == "occupancy"]
    assert "does not export DCGM_FI_PROF_SM_OCCUPANCY" in a.reason and "collector CSV" in a.reason
    assert g0.clock_event_reasons == []


def test_no_clock_field_means_unknown_not_none_active() -> None:
    text = "\n".join(line for line in FIXTURE.read_text().splitlines() if "CLOCKS_EVENT" not in line)
    assert parse_exposition(text, ts=0.0)[0].clock_event_reasons is None


def test_node_override_and_garbage_input() -> None:
    assert parse_exposition(FIXTURE.read_text(), node="n7", ts=0.0)[0].node == "n7"
    with pytest.raises(ValueError, match="Prometheus text exposition"):
        parse_exposition('DCGM_FI_DEV_SM_CLOCK{gpu="0" 12\n', ts=0.0)


def test_scrapes_a_real_http_endpoint() -> None:
    body = FIXTURE.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        samples = DcgmScraper(url, clock=lambda: 5.0).sample()
        assert len(samples) == 2 and samples[0].ts == 5.0
    finally:
        server.shutdown()
        server.server_close()


def test_unreachable_exporter_is_unavailable() -> None:
    s = socket_free_port()
    with pytest.raises(SamplerUnavailable, match="dcgm-exporter not reachable"):
        DcgmScraper(f"http://127.0.0.1:{s}/metrics", timeout_s=2.0).sample()


def socket_free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

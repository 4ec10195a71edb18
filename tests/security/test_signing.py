"""Signed patches: the critic's Ed25519 signature over a VerifiedPatch survives the wire and fails for
any altered field, another key, a missing signature or a payload that is not a patch."""

from __future__ import annotations

import stat
from pathlib import Path

import msgspec
import pytest

from shared.messages import Measurement, VerifiedPatch, decode, encode
from shared.signing import (
    canonical_bytes,
    check_patch,
    load_private_key,
    load_public_key,
    make_keypair,
    sign,
    verify,
)


def _patch() -> VerifiedPatch:
    return VerifiedPatch(source="critic", kernel="matmul_kernel", candidate_id="c1", diff="-BLOCK 32\n+BLOCK 128",
                         config={"BLOCK_M": 128, "num_warps": 8}, version=3, job_id="job-1",
                         speedup=Measurement(name="speedup", value=8.05, unit="x", low=8.0, high=8.1))


@pytest.fixture
def keys(tmp_path: Path):  # type: ignore[no-untyped-def]
    priv, pub = make_keypair(tmp_path / "signing")
    return load_private_key(priv), load_public_key(pub), priv


def test_key_pair_files_and_modes(keys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, _, priv = keys
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "signing").stat().st_mode) == 0o700
    again, _ = make_keypair(tmp_path / "signing")  # kept, not replaced
    assert again.read_bytes() == priv.read_bytes()


def test_a_signed_patch_checks_after_the_wire(keys) -> None:  # type: ignore[no-untyped-def]
    key, pub, _ = keys
    signed = sign(_patch(), key)
    assert signed.signature.startswith("ed25519:")
    wire = encode(signed)
    got = decode(wire, VerifiedPatch)
    assert verify(got, pub).ok
    assert check_patch(wire, pub).ok
    assert b"signature" not in canonical_bytes(signed)


@pytest.mark.parametrize("field,value", [
    ("diff", "-BLOCK 32\n+BLOCK 256"), ("config", {"BLOCK_M": 64, "num_warps": 8}),
    ("speedup", Measurement(name="speedup", value=80.5, unit="x")), ("kernel", "other_kernel"), ("version", 4),
    ("evidence_chain", []), ("job_id", "job-2"), ("id", "01FORGED"),
])
def test_an_altered_patch_fails(keys, field: str, value: object) -> None:  # type: ignore[no-untyped-def]
    key, pub, _ = keys
    signed = sign(_patch(), key)
    if field == "evidence_chain":
        value = [{"step": "trigger", "message_id": "x", "summary": "forged"}]
        doc = msgspec.to_builtins(signed) | {"evidence_chain": value}
        altered = msgspec.convert(doc, VerifiedPatch)
    else:
        altered = msgspec.structs.replace(signed, **{field: value})
    check = verify(altered, pub)
    assert not check.ok and "forged or altered" in check.reason


def test_forged_unsigned_and_garbage_fail(keys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, pub, _ = keys
    other, _ = make_keypair(tmp_path / "attacker")
    forged = sign(_patch(), load_private_key(other))
    assert "not the trusted critic key" in verify(forged, pub).reason
    # The attacker's signature relabelled with the critic's key id still fails.
    kid = sign(_patch(), keys[0]).signature.split(":")[1]
    relabelled = msgspec.structs.replace(forged, signature=f"ed25519:{kid}:{forged.signature.split(':')[2]}")
    assert "forged or altered" in verify(relabelled, pub).reason
    assert verify(_patch(), pub).reason == "unsigned"
    assert not verify(sign(_patch(), keys[0]), None).ok  # no trusted key: nothing passes
    assert not check_patch(b'{"type":"io.nats.jetstream.api.v1.stream_info_response"}', pub).ok
    assert not check_patch(b"not json", pub).ok
    bad = msgspec.structs.replace(_patch(), signature="ed25519:abc:!!!")
    assert "malformed" in verify(bad, pub).reason

"""Ed25519 signatures on patches: the critic signs, every subscriber checks.

The signed bytes are the canonical JSON of the message without its `signature` field (msgspec, keys
sorted), so any change to any other field - the diff, the config, the speedup, the evidence chain -
breaks the signature. `kpilot up` makes the key pair in the state dir (`signing/critic.key`, mode
0600; `signing/critic.pub`) and, as admin, publishes the public key in the `trust` KV bucket (key
`critic`), which only admin may write. A subscriber checks with:

    key = await trusted_key(bus.js)            # or load_public_key(<state-dir>/signing/critic.pub)
    check = verify(patch, key)                 # check.ok, check.reason
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from shared.natsauth import write_secret
from shared.subjects import TRUST_BUCKET

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from nats.js import JetStreamContext

CRITIC_KEY = "critic"  # the key of the critic's public key in TRUST_BUCKET
SIGNING_KEY_ENV = "KPILOT_SIGNING_KEY"  # path of the critic's private key (`kpilot up` sets it)

S = TypeVar("S", bound=msgspec.Struct)


class SignatureCheck(msgspec.Struct, frozen=True):
    ok: bool
    reason: str  # "signed by <key id>" or why the check failed
    key_id: str = ""


def canonical_bytes(msg: msgspec.Struct) -> bytes:
    """What is signed: the message as JSON without its `signature` field, keys sorted."""
    doc: dict[str, Any] = msgspec.to_builtins(msg)
    doc.pop("signature", None)
    return msgspec.json.encode(doc, order="sorted")


def key_id(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()[:16]


def key_id_of(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    pub = key.public_key() if hasattr(key, "sign") else key
    return key_id(_raw(pub))  # type: ignore[arg-type]


def _raw(public: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def make_keypair(directory: Path) -> tuple[Path, Path]:
    """The critic's key pair under `directory` (private 0600, public 0644); kept when it is there."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    priv, pub = directory / "critic.key", directory / "critic.pub"
    if priv.exists() and pub.exists():
        priv.chmod(0o600)
        return priv, pub
    key = Ed25519PrivateKey.generate()
    write_secret(priv, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()))
    pub.write_bytes(base64.b64encode(_raw(key.public_key())) + b"\n")
    directory.chmod(0o700)
    return priv, pub


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    p = Path(path)
    if p.stat().st_mode & 0o077:
        raise ValueError(f"the signing key {p} is readable by others. Fix: chmod 600 {p}")
    key = serialization.load_pem_private_key(p.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{p} is not an Ed25519 private key. Fix: let `kpilot up` make one")  # noqa: TRY004
    return key


def public_key_from_b64(text: bytes | str) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    return Ed25519PublicKey.from_public_bytes(base64.b64decode(text.strip()))


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    return public_key_from_b64(Path(path).read_bytes())


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> bytes:
    pub = key.public_key() if hasattr(key, "sign") else key
    return base64.b64encode(_raw(pub))  # type: ignore[arg-type]


def sign(msg: S, key: Ed25519PrivateKey) -> S:
    """`msg` with `signature` set to "ed25519:<key id>:<base64 signature>" over its canonical bytes."""
    sig = base64.b64encode(key.sign(canonical_bytes(msg))).decode()
    return msgspec.structs.replace(msg, signature=f"ed25519:{key_id(_raw(key.public_key()))}:{sig}")


def verify(msg: msgspec.Struct, key: Ed25519PublicKey | None) -> SignatureCheck:
    """Whether `msg` carries a valid signature by `key`; never raises for a bad message."""
    from cryptography.exceptions import InvalidSignature

    if key is None:
        return SignatureCheck(False, "no trusted public key (trust KV bucket or <state-dir>/signing/critic.pub)")
    sig: str = getattr(msg, "signature", "") or ""
    if not sig:
        return SignatureCheck(False, "unsigned")
    want = key_id(_raw(key))
    try:
        scheme, kid, b64 = sig.split(":", 2)
        raw_sig = base64.b64decode(b64, validate=True)
    except ValueError:
        return SignatureCheck(False, "malformed signature (want ed25519:<key id>:<base64>)")
    if scheme != "ed25519":
        return SignatureCheck(False, f"unknown signature scheme {scheme!r}")
    if kid != want:
        return SignatureCheck(False, f"signed by key {kid}, not the trusted critic key {want}", kid)
    try:
        key.verify(raw_sig, canonical_bytes(msg))
    except InvalidSignature:
        return SignatureCheck(False, "signature does not match the content (forged or altered)", kid)
    return SignatureCheck(True, f"signed by critic key {kid}", kid)


async def trusted_key(js: JetStreamContext) -> Ed25519PublicKey | None:
    """The critic's public key from the `trust` bucket, or None when none was published."""
    import nats.js.errors
    try:
        kv = await js.key_value(TRUST_BUCKET)
        entry = await kv.get(CRITIC_KEY)
    except (nats.js.errors.BucketNotFoundError, nats.js.errors.KeyNotFoundError, nats.js.errors.NotFoundError):
        return None
    return public_key_from_b64(entry.value) if entry.value else None


async def publish_trusted_key(js: JetStreamContext, public_b64: bytes) -> None:
    """Put the critic's public key in the `trust` bucket: admin only (the server refuses anyone else)."""
    kv = await js.key_value(TRUST_BUCKET)
    await kv.put(CRITIC_KEY, public_b64)


def check_patch(data: bytes, key: Ed25519PublicKey | None) -> SignatureCheck:
    """Decode a `patches.verified.*` payload and check its signature; a payload that is not a
    VerifiedPatch fails the check (it says why) instead of raising."""
    from shared.messages import VerifiedPatch
    try:
        patch = msgspec.json.decode(data, type=VerifiedPatch)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        return SignatureCheck(False, f"not a VerifiedPatch: {str(e)[:120]}")
    return verify(patch, key)

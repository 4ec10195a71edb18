"""The critic service signs the verified patch it publishes with the key `kpilot up` gives it, and a
subscriber's check against the public key in the admin-written `trust` bucket passes; without a key the
patch goes out unsigned and fails every check."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.messages import VerifiedPatch
from shared.natsserver import EmbeddedServer
from shared.signing import SIGNING_KEY_ENV, make_keypair, publish_trusted_key, trusted_key, verify
from tests.conftest import BusFactory
from tests.critic.chains import job
from tests.critic.test_service import publish, start_critic, wait_for


@pytest.mark.parametrize("with_key", [True, False])
async def test_the_critic_signs_what_it_verifies(make_bus: BusFactory, nats_server: EmbeddedServer,
                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 with_key: bool) -> None:
    priv, pub = make_keypair(tmp_path / "signing")
    admin = await make_bus("admin")
    await publish_trusted_key(admin.js, pub.read_bytes().strip())
    if with_key:
        monkeypatch.setenv(SIGNING_KEY_ENV, str(priv))
    else:
        monkeypatch.delenv(SIGNING_KEY_ENV, raising=False)
    j = job()
    await start_critic(make_bus)
    await publish(make_bus, j.messages)
    op = await make_bus("operator")
    [patch] = await wait_for(op, "patches.verified.>")
    assert isinstance(patch, VerifiedPatch)
    check = verify(patch, await trusted_key(op.js))
    assert check.ok is with_key, check
    if not with_key:
        assert check.reason == "unsigned"

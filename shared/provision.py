"""Create or update every stream, KV bucket and object store of `shared.subjects`; safe to run again."""

from __future__ import annotations

import nats.js.errors
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, ObjectStoreConfig, RetentionPolicy, StorageType, StreamConfig

from shared.subjects import KV_BUCKETS, OBJECT_STORES, STREAMS, Stream


def stream_config(s: Stream, replicas: int = 1) -> StreamConfig:
    return StreamConfig(name=s.name, description=s.description, subjects=list(s.subjects),
                        retention=RetentionPolicy(s.retention), storage=StorageType(s.storage),
                        max_age=s.max_age_s, duplicate_window=s.duplicate_window_s, max_bytes=s.max_bytes,
                        num_replicas=replicas)


async def provision(js: JetStreamContext, replicas: int = 1) -> list[str]:
    """Bring the server in line with the table; returns what was created or updated. `replicas`: copies
    of every stream, bucket and object store (3 on a three-server cluster, shared/natscluster.py)."""
    changed: list[str] = []
    for s in STREAMS:
        cfg = stream_config(s, replicas)
        try:
            info = await js.stream_info(s.name)
        except nats.js.errors.NotFoundError:
            await js.add_stream(cfg)
            changed.append(f"stream {s.name} created")
            continue
        if sorted(info.config.subjects or []) != sorted(cfg.subjects or []) or \
                info.config.max_age != cfg.max_age or info.config.max_bytes != cfg.max_bytes or \
                (info.config.num_replicas or 1) != replicas:
            await js.update_stream(cfg)
            changed.append(f"stream {s.name} updated")
    for b in KV_BUCKETS:
        try:
            await js.key_value(b.name)
        except nats.js.errors.BucketNotFoundError:
            await js.create_key_value(KeyValueConfig(bucket=b.name, description=b.description,
                                                     history=b.history, storage=StorageType.FILE,
                                                     replicas=replicas))
            changed.append(f"kv {b.name} created")
    for o in OBJECT_STORES:
        try:
            await js.object_store(o.name)
        except nats.js.errors.BucketNotFoundError:
            await js.create_object_store(o.name, ObjectStoreConfig(description=o.description,
                                                                   storage=StorageType.FILE,
                                                                   replicas=replicas))
            changed.append(f"object store {o.name} created")
    return changed

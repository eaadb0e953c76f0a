"""Warehouse persistence of the entity registry, so ids survive across runs and processes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb

from oprag_pipeline.registry.taxonomy import Entity, Registry
from oprag_pipeline.schema import RegistryEntity

DDL = """
CREATE TABLE IF NOT EXISTS extraction_sample (
    domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, stratum VARCHAR NOT NULL, sample_rank INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS entity_candidates (
    domain VARCHAR NOT NULL, candidate_key VARCHAR NOT NULL, name VARCHAR NOT NULL,
    aliases JSON NOT NULL, doc_frequency INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS entity_registry (
    domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, name VARCHAR NOT NULL,
    tier1_id VARCHAR NOT NULL, tier1_name VARCHAR NOT NULL, tier2_id VARCHAR NOT NULL, tier2_name VARCHAR NOT NULL,
    aliases VARCHAR[] NOT NULL, alias_counts JSON NOT NULL, centroid FLOAT[] NOT NULL,
    status VARCHAR NOT NULL, merged_into VARCHAR, registry_version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS entity_registry_unmapped (
    domain VARCHAR NOT NULL, candidate_key VARCHAR NOT NULL, doc_frequency INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS entity_registry_versions (
    domain VARCHAR NOT NULL, registry_version INTEGER NOT NULL, created_at TIMESTAMP NOT NULL,
    entities_created INTEGER NOT NULL, candidates_mapped INTEGER NOT NULL, unmapped_pool INTEGER NOT NULL,
    overrides_hash VARCHAR
);
"""


def ensure_tables(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute(DDL)


def load_registry(conn: duckdb.DuckDBPyConnection, domain: str) -> tuple[Registry | None, str | None]:
    """The stored registry of a domain and the hash of the overrides it was built with."""
    rows = conn.execute(
        """SELECT entity_id, name, tier2_id, tier2_name, tier1_id, tier1_name, alias_counts, centroid, status,
                  merged_into, registry_version
           FROM entity_registry WHERE domain = ? ORDER BY entity_id""",
        [domain],
    ).fetchall()
    if not rows:
        return None, None
    entities = [
        Entity(
            entity_id=r[0],
            name=r[1],
            tier2_id=r[2],
            tier2_name=r[3],
            tier1_id=r[4],
            tier1_name=r[5],
            aliases=json.loads(r[6]),
            centroid=list(r[7]),
            status=r[8],
            merged_into=r[9],
        )
        for r in rows
    ]
    unmapped = dict(
        conn.execute(
            "SELECT candidate_key, doc_frequency FROM entity_registry_unmapped WHERE domain = ?", [domain]
        ).fetchall()
    )
    meta = conn.execute(
        "SELECT overrides_hash FROM entity_registry_versions WHERE domain = ? ORDER BY registry_version DESC, "
        "created_at DESC LIMIT 1",
        [domain],
    ).fetchone()
    return Registry(version=int(rows[0][10]), entities=entities, unmapped=unmapped), (meta[0] if meta else None)


def save_registry(
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    registry: Registry,
    summary: dict[str, int],
    overrides_hash: str | None,
) -> None:
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("DELETE FROM entity_registry WHERE domain = ?", [domain])
        conn.execute("DELETE FROM entity_registry_unmapped WHERE domain = ?", [domain])
        if registry.entities:
            conn.executemany(
                "INSERT INTO entity_registry VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        domain,
                        e.entity_id,
                        e.name,
                        e.tier1_id,
                        e.tier1_name,
                        e.tier2_id,
                        e.tier2_name,
                        list(e.aliases),
                        json.dumps(e.aliases),
                        e.centroid,
                        e.status,
                        e.merged_into,
                        registry.version,
                    ]
                    for e in registry.entities
                ],
            )
        if registry.unmapped:
            conn.executemany(
                "INSERT INTO entity_registry_unmapped VALUES (?, ?, ?)",
                [[domain, k, n] for k, n in registry.unmapped.items()],
            )
        conn.execute(
            "INSERT INTO entity_registry_versions VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                domain,
                registry.version,
                datetime.now(UTC).replace(tzinfo=None),
                summary.get("created", 0),
                summary.get("mapped", 0),
                summary.get("unmapped", 0),
                overrides_hash,
            ],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def registry_entities(conn: duckdb.DuckDBPyConnection, domain: str) -> tuple[int, list[RegistryEntity]]:
    """The active entities as extractors see them (merged entities' aliases already point at survivors)."""
    registry, _ = load_registry(conn, domain)
    if registry is None:
        return 0, []
    aliases_of: dict[str, set[str]] = {e.entity_id: set() for e in registry.active()}
    survivors = registry.survivors()
    for entity in registry.entities:
        target = survivors.get(entity.entity_id)
        if target is not None:
            aliases_of[target].update(entity.aliases)
    return registry.version, [
        RegistryEntity(
            entity_id=e.entity_id,
            name=e.name,
            aliases=tuple(sorted(aliases_of[e.entity_id])),
            tier1_name=e.tier1_name,
            tier2_name=e.tier2_name,
        )
        for e in registry.active()
    ]

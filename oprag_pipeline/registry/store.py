"""Warehouse persistence of the entity registry, so ids survive across runs and processes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb

from oprag_pipeline import warehouse
from oprag_pipeline.registry.taxonomy import Entity, Registry
from oprag_pipeline.schema import RegistryEntity

TABLES = (
    "extraction_sample",
    "entity_candidates",
    "entity_registry",
    "entity_registry_unmapped",
    "entity_registry_versions",
)
"""The registry stage's tables, declared in `oprag_pipeline/warehouse.py`."""


def ensure_tables(conn: duckdb.DuckDBPyConnection) -> None:
    warehouse.ensure_tables(conn, *TABLES)


def load_registry(conn: duckdb.DuckDBPyConnection, domain: str) -> tuple[Registry | None, str | None]:
    """The stored registry of a domain and the hash of the overrides it was built with."""
    rows = warehouse.records(
        conn.execute(
            """SELECT entity_id, name, tier2_id, tier2_name, tier1_id, tier1_name, alias_counts, centroid, status,
                      merged_into, registry_version
               FROM entity_registry WHERE domain = ? ORDER BY entity_id""",
            [domain],
        )
    )
    if not rows:
        return None, None
    entities = [
        Entity(
            entity_id=r["entity_id"],
            name=r["name"],
            tier2_id=r["tier2_id"],
            tier2_name=r["tier2_name"],
            tier1_id=r["tier1_id"],
            tier1_name=r["tier1_name"],
            aliases=json.loads(r["alias_counts"]),
            centroid=list(r["centroid"]),
            status=r["status"],
            merged_into=r["merged_into"],
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
    return Registry(version=int(rows[0]["registry_version"]), entities=entities, unmapped=unmapped), (
        meta[0] if meta else None
    )


def save_registry(
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    registry: Registry,
    summary: dict[str, int],
    overrides_hash: str | None,
) -> None:
    with warehouse.transaction(conn):
        warehouse.replace_rows(
            conn,
            "entity_registry",
            [
                {
                    "entity_id": e.entity_id,
                    "name": e.name,
                    "tier1_id": e.tier1_id,
                    "tier1_name": e.tier1_name,
                    "tier2_id": e.tier2_id,
                    "tier2_name": e.tier2_name,
                    "aliases": list(e.aliases),
                    "alias_counts": json.dumps(e.aliases),
                    "centroid": e.centroid,
                    "status": e.status,
                    "merged_into": e.merged_into,
                    "registry_version": registry.version,
                }
                for e in registry.entities
            ],
            within=True,
            domain=domain,
        )
        warehouse.replace_rows(
            conn,
            "entity_registry_unmapped",
            [{"candidate_key": k, "doc_frequency": n} for k, n in registry.unmapped.items()],
            within=True,
            domain=domain,
        )
        warehouse.insert_rows(
            conn,
            "entity_registry_versions",
            [
                {
                    "domain": domain,
                    "registry_version": registry.version,
                    "created_at": datetime.now(UTC).replace(tzinfo=None),
                    "entities_created": summary.get("created", 0),
                    "candidates_mapped": summary.get("mapped", 0),
                    "unmapped_pool": summary.get("unmapped", 0),
                    "overrides_hash": overrides_hash,
                }
            ],
        )


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

"""From mined candidates to a stable 3-tier entity registry (tier1 → tier2 → entity, with aliases).

Clustering is scipy's average-linkage hierarchy over cosine distances of the candidates' embeddings, cut at two
heights: tight (the same target written differently: "front desk", "reception desk") and looser (one aspect area:
"front desk", "check-in", "concierge"). The top tier is not a third cut: each tier 2 is filed under one of a few
broad classes of general English by its members' affinity to several anchor nouns per class, or under "other
topics" when no class clearly leads (see `CATEGORIES`); a cut at a loose height chained unrelated areas together and
then named them all after whichever class their blurred centroid was nearest. String similarity is folded into the
distance so typos and plural or compound variants merge even when their embeddings disagree.

Stability is the point of `update_registry`: ids already issued are never renumbered or reused. New mentions
that match an existing entity (alias or embedding) join it; the rest wait in an unmapped pool and only form new
entities once enough of them accumulate, so a trickle of new documents cannot churn the taxonomy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

import numpy as np

from oprag_pipeline.registry.candidates import ATTRIBUTES, Candidate, acronym_links, candidate_key

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class ClusterThresholds:
    """Cosine-distance cut heights; defaults suit sentence-embedding models of the MiniLM family."""

    entity: float = 0.3
    tier2: float = 0.5
    tier1: float = 0.62  # a later entity this near an existing one shares its tier 1 (see `_reuse_nearest_tiers`)
    map_to_existing: float = 0.25  # a new candidate joins an existing entity within this distance of its centroid


@dataclass
class Entity:
    entity_id: str
    name: str
    tier2_id: str
    tier2_name: str
    tier1_id: str
    tier1_name: str
    aliases: dict[str, int] = field(default_factory=dict)  # alias → mention count in the sample
    centroid: list[float] = field(default_factory=list)
    status: str = "active"  # active | dropped | merged
    merged_into: str | None = None


@dataclass
class Registry:
    version: int
    entities: list[Entity]
    unmapped: dict[str, int] = field(default_factory=dict)  # candidate key → documents mentioning it

    def active(self) -> list[Entity]:
        return [e for e in self.entities if e.status == "active"]

    def by_id(self) -> dict[str, Entity]:
        return {e.entity_id: e for e in self.entities}

    def alias_map(self) -> dict[str, str]:
        """normalised alias → active entity id (merged entities point at their survivor)."""
        survivors = self.survivors()
        mapping: dict[str, str] = {}
        for entity in self.entities:
            target = survivors.get(entity.entity_id)
            if target is None:
                continue
            for alias in entity.aliases:
                mapping.setdefault(candidate_key(alias), target)
        return mapping

    def survivors(self) -> dict[str, str]:
        index = self.by_id()
        result: dict[str, str] = {}
        for entity in self.entities:
            current = entity
            seen = set()
            while current.status == "merged" and current.merged_into and current.entity_id not in seen:
                seen.add(current.entity_id)
                current = index[current.merged_into]
            if current.status == "active":
                result[entity.entity_id] = current.entity_id
        return result


def _string_distance(a: str, b: str) -> float:
    """0 when one is a spelling variant of the other ("accomodation" / "accommodation"), else 1.

    Short words are never merged on spelling alone ("light" and "flight" are different things), and typos rarely
    touch the first letter, so both are required besides a high similarity ratio.
    """
    if a.replace("-", "").replace(" ", "") == b.replace("-", "").replace(" ", ""):
        return 0.0  # one word written open, hyphenated or closed: "wi-fi" / "wifi", "air con" / "aircon"
    if min(len(a), len(b)) < 6 or a[0] != b[0]:
        return 1.0
    return 0.0 if SequenceMatcher(None, a, b).ratio() >= 0.9 else 1.0


def _normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def cosine_distances(vectors: np.ndarray) -> np.ndarray:
    unit = _normalised(np.asarray(vectors, dtype=np.float64))
    return np.clip(1.0 - unit @ unit.T, 0.0, 2.0)


def _modifies(longer: str, shorter: str) -> bool:
    """True when `shorter` is a modifier inside `longer`, not its head: "router" in "router table", "battery" in
    "battery life". English compounds are head-final, so "rooftop pool" is a kind of pool and may join it."""
    long_words, short_words = longer.split(), shorter.split()
    if len(short_words) >= len(long_words) or not set(short_words) <= set(long_words):
        return False
    return long_words[-len(short_words) :] != short_words


LIGHT_HEADS = frozenset("team crew department process procedure system area level".split())
"""Head nouns that add no target of their own: they name the people, the procedure, the setting or the extent of
what their modifier names ("the housekeeping team" is housekeeping, "the check-in process" is check-in, "the pool
area" is the pool, "the noise level" is the noise). General English light nouns, not any domain's words: such a
compound is one target with its modifier, the exception to "a compound never joins its modifier"."""


def _light_compound(longer: str, shorter: str) -> bool:
    """True for "<shorter> <light head>": "housekeeping team" and "housekeeping"."""
    words = longer.split()
    return len(words) >= 2 and words[-1] in LIGHT_HEADS and " ".join(words[:-1]) == shorter


def combined_distances(keys: Sequence[str], vectors: np.ndarray, same: Sequence[tuple[str, str]] = ()) -> np.ndarray:
    """Cosine distances, with spelling variants at 0 and a phrase and its own parts at the maximum.

    A phrase and a modifier in it are different targets even when their embeddings are close: "router table" is not
    the router, "battery life" is not the battery, "hotel staff" is not the hotel. Keeping them apart at the entity
    level is what stops an alias landing on the wrong entity. A compound may join its head ("rooftop pool" with
    "pool") when their embeddings are close, and is otherwise linked to it in the tier above (see `build_entities`).
    A compound with a light head is its modifier ("housekeeping team" is housekeeping, see `LIGHT_HEADS`).
    Pairs in `same` (an acronym and its expansion, see `candidates.acronym_links`) are one target: distance 0.
    """
    distances = cosine_distances(vectors)
    n = len(keys)
    for i in range(n):
        for j in range(i + 1, n):
            if _light_compound(keys[i], keys[j]) or _light_compound(keys[j], keys[i]):
                distances[i, j] = distances[j, i] = 0.0
            elif _modifies(keys[i], keys[j]) or _modifies(keys[j], keys[i]):
                distances[i, j] = distances[j, i] = 2.0
            elif _string_distance(keys[i], keys[j]) == 0.0:
                distances[i, j] = distances[j, i] = 0.0
    position = {key: i for i, key in enumerate(keys)}
    for a, b in same:
        if a in position and b in position:
            distances[position[a], position[b]] = distances[position[b], position[a]] = 0.0
    np.fill_diagonal(distances, 0.0)
    return distances


CATEGORIES: dict[str, tuple[str, ...]] = {
    name: tuple(anchors.split())
    for name, anchors in {
        "people and service": "staff employee worker waiter manager assistant service support team owner",
        "food and drink": "food meal dish drink beverage taste flavour menu snack dessert",
        "places and buildings": "place area location building room neighbourhood street city view surroundings",
        "objects and equipment": "device equipment furniture tool part machine appliance material fabric accessory",
        "qualities": "quality condition size comfort appearance cleanliness noise speed durability smell",
        "price and money": "price cost fee payment charge refund rate money budget value",
        "activities and processes": "process procedure delivery booking waiting shipping installation setup arrival "
        "transport",
        "information and communication": "information communication message website connection internet software "
        "app account phone",
        "content and ideas": "content story idea writing character plot book author music film",
    }.items()
}
"""Readable tier-1 names: broad noun classes of general English (after WordNet's lexicographer files, merged to a
handful), each with ten general nouns of the class as anchors. An entity's affinity to a class is the mean cosine
of its three nearest anchors: one label phrase embedded as a whole let a single accidental neighbour decide ("speed"
under price and money, "bathroom & towels" under food and drink), while several anchors have to agree."""

OTHER_CATEGORY = "other topics"
"""The tier 1 of a tier 2 that no class clearly fits: an honest "unsorted" rather than a wrong class."""

CATEGORY_TOP_ANCHORS = 3
CATEGORY_MARGIN = 0.02
"""A tier 2 goes to its best class only when that class leads the runner-up by this much (in mean anchor cosine,
weighted over its entities); otherwise to `OTHER_CATEGORY`. Between MiniLM's cosines of related and unrelated nouns
(about 0.3 to 0.6) a lead under 0.02 is a tie: "battery life" is as near to price as to qualities, "check-in" as
near to communication as to places, and a tie filed either way reads wrong half the time."""


def category_affinities(names: Sequence[str], embed: Embed) -> np.ndarray:
    """(len(names), len(CATEGORIES)): each name's mean cosine to its `CATEGORY_TOP_ANCHORS` nearest anchors of each
    class (see `CATEGORIES`)."""
    anchors = [(c, word) for c, words in enumerate(CATEGORIES.values()) for word in words]
    anchor_vectors = _normalised(np.asarray(embed([w for _, w in anchors]), dtype=np.float64))
    classes = np.array([c for c, _ in anchors])
    similarities = _normalised(np.asarray(embed(list(names)), dtype=np.float64)) @ anchor_vectors.T
    result = np.zeros((len(names), len(CATEGORIES)))
    for c in range(len(CATEGORIES)):
        nearest = np.sort(similarities[:, classes == c], axis=1)[:, ::-1][:, :CATEGORY_TOP_ANCHORS]
        result[:, c] = nearest.mean(axis=1)
    return result


def _categories_of(names: Sequence[str], weights: Sequence[int], tier2_labels: np.ndarray, embed: Embed) -> np.ndarray:
    """The tier-1 index of each group: its tier 2's class (affinities of the tier 2's entities, weighted by their
    documents), or `OTHER_CATEGORY` (index len(CATEGORIES)) when no class leads by `CATEGORY_MARGIN`. Deciding per
    tier 2, not per entity, keeps every tier 2 inside one tier 1."""
    affinities = category_affinities(names, embed)
    result = np.zeros(len(names), dtype=int)
    for label in set(int(t) for t in tier2_labels):
        members = [p for p in range(len(names)) if int(tier2_labels[p]) == label]
        member_weights = np.array([max(1, weights[p]) for p in members], dtype=np.float64)
        scores = (affinities[members] * member_weights[:, None]).sum(axis=0) / member_weights.sum()
        ranked = np.argsort(scores)[::-1]
        decided = scores[ranked[0]] - scores[ranked[1]] >= CATEGORY_MARGIN
        result[members] = int(ranked[0]) if decided else len(CATEGORIES)
    return result


def is_adjective_quality(candidate: Candidate) -> bool:
    """A quality mined from its adjectives alone ("spotless" → cleanliness, "slow" → speed), not a thing named by a
    noun: its category is known by construction, whatever the embedding of its name says."""
    adjectives = ATTRIBUTES.get(candidate.key)
    return bool(adjectives) and bool(candidate.aliases) and all(a in adjectives for a in candidate.aliases)


def _file_qualities_under_qualities(
    ordered: Sequence[Sequence[int]],
    candidates: Sequence[Candidate],
    tier1_labels: np.ndarray,
    tier2_labels: np.ndarray,
) -> None:
    """Entities that are adjective qualities go to the "qualities" category (MiniLM put "speed" under price and
    money: the word alone is ambiguous, its adjectives are not). One sharing a tier 2 with things gets a tier 2 of
    its own, so every tier 2 stays inside one tier 1. In place."""
    qualities_category = list(CATEGORIES).index("qualities")
    quality = [all(is_adjective_quality(candidates[m]) for m in members) for members in ordered]
    next_label = int(max(tier2_labels, default=0)) + 1
    for position, is_quality in enumerate(quality):
        if not is_quality:
            continue
        shares = any(
            not quality[other] and int(tier2_labels[other]) == int(tier2_labels[position])
            for other in range(len(ordered))
        )
        if shares:
            tier2_labels[position] = next_label
            next_label += 1
        tier1_labels[position] = qualities_category


def head_word(key: str) -> str:
    """The head noun of a target key: its last word, once a light head is set aside ("support team" is support,
    "seller support" is a kind of support)."""
    words = key.split()
    if len(words) >= 2 and words[-1] in LIGHT_HEADS:
        words = words[:-1]
    return words[-1]


def _join_compounds_that_share_a_head(
    ordered: Sequence[Sequence[int]],
    keys: Sequence[str],
    tier2_labels: np.ndarray,
    distances: np.ndarray,
    radius: float,
) -> None:
    """Compounds with one head are kinds of one thing and share a tier 2 even when the head alone is no entity:
    "seller support", "chat support" and "the support team" (support); "parking fee" and "resort fee". English
    compounds are head-final and the head names what the compound is a kind of; MiniLM alone put "seller support"
    and "the support team" 0.55 apart, beyond the tier-2 cut. A head can have two senses ("internet connection",
    "train connections": 0.65 apart), so two groups join only within `radius` of each other, the distance at which
    a later entity shares an existing one's tier 1. The later group's tier 2 joins the most discussed group's
    whole. In place."""
    first_with_head: dict[str, int] = {}
    for position, members in enumerate(ordered):  # frequency order: the most discussed group keeps its label
        for head in sorted({head_word(keys[m]) for m in members if len(keys[m].split()) >= 2}):
            first = first_with_head.setdefault(head, position)
            keep, absorbed = int(tier2_labels[first]), int(tier2_labels[position])
            if first != position and keep != absorbed and distances[first, position] < radius:
                tier2_labels[tier2_labels == absorbed] = keep


def hierarchical_labels(distances: np.ndarray, height: float) -> np.ndarray:
    if len(distances) == 1:
        return np.array([1])
    # imported here: scipy.cluster costs ~0.5 s, and the registry store (which every `oprag` command loads) needs
    # this module's names, not its clustering
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    tree = linkage(squareform(distances, checks=False), method="average")
    return fcluster(tree, t=height, criterion="distance")


def _next_number(ids: Sequence[str], prefix: str) -> int:
    numbers = [int(i[len(prefix) :]) for i in ids if i.startswith(prefix) and i[len(prefix) :].isdigit()]
    return max(numbers, default=0) + 1


def build_entities(
    candidates: Sequence[Candidate],
    embed: Embed,
    thresholds: ClusterThresholds,
    *,
    existing_ids: Sequence[str] = (),
) -> list[Entity]:
    """Cluster candidates into entities under a fresh 3-tier taxonomy, numbering after `existing_ids`."""
    if not candidates:
        return []
    keys = [c.key for c in candidates]
    vectors = np.asarray(embed([c.name for c in candidates]), dtype=np.float64)
    distances = combined_distances(keys, vectors, acronym_links(candidates))
    entity_labels = hierarchical_labels(distances, thresholds.entity)

    groups: dict[int, list[int]] = {}
    for index, label in enumerate(entity_labels):
        groups.setdefault(int(label), []).append(index)
    ordered = sorted(groups.values(), key=lambda members: -sum(candidates[m].doc_frequency for m in members))

    centroids = np.stack([_normalised(vectors[members]).mean(axis=0) for members in ordered])
    group_distances = cosine_distances(centroids)
    tier2_labels = hierarchical_labels(group_distances, thresholds.tier2)
    # A multi-word target sits under its head's tier 2 when the head is an entity: "front desk staff" with "staff",
    # "rooftop bar" with "bar" (English compounds are head-final: the head is the last word, or the longest tail
    # that is an entity). "battery life" and "battery" are not linked: "battery" is the modifier.
    group_of_key = {keys[m]: position for position, members in enumerate(ordered) for m in members}
    for position, members in enumerate(ordered):
        words = keys[members[0]].split()
        for k in range(1, len(words)):
            head = group_of_key.get(" ".join(words[k:]))
            if head is not None:
                tier2_labels[position] = tier2_labels[head]
                break
    _join_compounds_that_share_a_head(ordered, keys, tier2_labels, group_distances, thresholds.tier1)
    group_names = [
        candidates[max(members, key=lambda m: (candidates[m].doc_frequency, -len(candidates[m].key)))].name
        for members in ordered
    ]
    tier1_labels = _categories_of(
        group_names, [sum(candidates[m].doc_frequency for m in members) for members in ordered], tier2_labels, embed
    )
    _file_qualities_under_qualities(ordered, candidates, tier1_labels, tier2_labels)
    tier1_names = dict(enumerate([*CATEGORIES, OTHER_CATEGORY]))
    tier2_names: dict[int, str] = {}
    for position in range(len(ordered)):  # frequency order: a tier 2 is named by its two most discussed entities
        label = int(tier2_labels[position])
        if label not in tier2_names:
            tier2_names[label] = group_names[position]
        elif " & " not in tier2_names[label]:
            tier2_names[label] = f"{tier2_names[label]} & {group_names[position]}"

    all_ids = list(existing_ids)
    entity_next = _next_number(all_ids, "e")
    tier2_next = _next_number(all_ids, "t2_")
    tier1_next = _next_number(all_ids, "t1_")
    tier2_ids: dict[int, tuple[str, str]] = {}
    tier1_ids: dict[int, tuple[str, str]] = {}
    entities: list[Entity] = []
    for position, members in enumerate(ordered):
        aliases: dict[str, int] = {}
        for m in members:
            for alias, count in candidates[m].aliases.items():
                aliases[alias] = aliases.get(alias, 0) + count
        entity_name = group_names[position]
        t2 = int(tier2_labels[position])
        t1 = int(tier1_labels[position])
        if t1 not in tier1_ids:
            tier1_ids[t1] = (f"t1_{tier1_next:03d}", tier1_names[t1])
            tier1_next += 1
        if t2 not in tier2_ids:
            tier2_ids[t2] = (f"t2_{tier2_next:03d}", tier2_names[t2])
            tier2_next += 1
        entities.append(
            Entity(
                entity_id=f"e{entity_next:04d}",
                name=entity_name,
                tier2_id=tier2_ids[t2][0],
                tier2_name=tier2_ids[t2][1],
                tier1_id=tier1_ids[t1][0],
                tier1_name=tier1_ids[t1][1],
                aliases=dict(sorted(aliases.items(), key=lambda kv: (-kv[1], kv[0]))),
                centroid=[round(float(x), 6) for x in centroids[position]],
            )
        )
        entity_next += 1
    return entities


def update_registry(
    previous: Registry | None,
    candidates: Sequence[Candidate],
    embed: Embed,
    *,
    thresholds: ClusterThresholds | None = None,
    recluster_min_unmapped: int = 20,
) -> tuple[Registry, dict[str, int]]:
    """The next registry version and a summary of what happened to the candidates."""
    thresholds = thresholds or ClusterThresholds()
    if previous is None or not previous.entities:
        entities = build_entities(candidates, embed, thresholds)
        return Registry(version=1, entities=entities), {"created": len(entities), "mapped": 0, "unmapped": 0}

    registry = Registry(
        version=previous.version,
        entities=[Entity(**{**e.__dict__, "aliases": dict(e.aliases)}) for e in previous.entities],
        unmapped=dict(previous.unmapped),
    )
    alias_map = registry.alias_map()
    index = registry.by_id()
    active = registry.active()
    centroids = np.array([e.centroid for e in active], dtype=np.float64) if active else np.zeros((0, 1))
    pending = [c for c in candidates if candidate_key(c.key) not in alias_map]
    mapped = len(candidates) - len(pending)
    for candidate in candidates:
        target = alias_map.get(candidate_key(candidate.key))
        if target:
            entity = index[target]
            for alias, count in candidate.aliases.items():
                entity.aliases[alias] = entity.aliases.get(alias, 0) + count
    still_unmapped: list[Candidate] = []
    if pending and len(active):
        vectors = _normalised(np.asarray(embed([c.name for c in pending]), dtype=np.float64))
        distances = 1.0 - vectors @ _normalised(centroids).T
        for candidate, row in zip(pending, distances, strict=True):
            best = int(np.argmin(row))
            if row[best] <= thresholds.map_to_existing:
                entity = active[best]
                for alias, count in candidate.aliases.items():
                    entity.aliases[alias] = entity.aliases.get(alias, 0) + count
                mapped += 1
            else:
                still_unmapped.append(candidate)
    else:
        still_unmapped = list(pending)
    for candidate in still_unmapped:
        registry.unmapped[candidate.key] = max(registry.unmapped.get(candidate.key, 0), candidate.doc_frequency)

    created: list[Entity] = []
    if len(registry.unmapped) >= recluster_min_unmapped:
        pool = {c.key: c for c in still_unmapped}
        pool_candidates = [
            pool[k] if k in pool else Candidate(k, aliases=_counter(k, n)) for k, n in registry.unmapped.items()
        ]
        for c in pool_candidates:
            if not c.doc_ids:
                c.doc_ids = {f"_{i}" for i in range(registry.unmapped[c.key])}
        existing_ids = (
            [e.entity_id for e in registry.entities]
            + [e.tier2_id for e in registry.entities]
            + [e.tier1_id for e in registry.entities]
        )
        created = build_entities(pool_candidates, embed, thresholds, existing_ids=existing_ids)
        _reuse_nearest_tiers(created, active, thresholds)
        registry.entities.extend(created)
        registry.unmapped = {}
    # Only a change of the entity set bumps the version: extraction results are cached per version, and new
    # aliases of existing entities are too frequent (every added document may bring one) to re-extract for.
    registry.version = previous.version + (1 if created else 0)
    return registry, {"created": len(created), "mapped": mapped, "unmapped": len(registry.unmapped)}


def _counter(key: str, count: int) -> Counter[str]:
    return Counter({key: count})


def _reuse_nearest_tiers(created: list[Entity], existing: list[Entity], thresholds: ClusterThresholds) -> None:
    """Entities formed later slot into the existing taxonomy where they are close to an existing entity."""
    if not created or not existing:
        return
    old = _normalised(np.array([e.centroid for e in existing], dtype=np.float64))
    for entity in created:
        vector = _normalised(np.array([entity.centroid], dtype=np.float64))[0]
        distances = 1.0 - old @ vector
        best = int(np.argmin(distances))
        if distances[best] <= thresholds.tier2:
            near = existing[best]
            entity.tier2_id, entity.tier2_name = near.tier2_id, near.tier2_name
            entity.tier1_id, entity.tier1_name = near.tier1_id, near.tier1_name
        elif distances[best] <= thresholds.tier1:
            near = existing[best]
            entity.tier1_id, entity.tier1_name = near.tier1_id, near.tier1_name


def apply_overrides(registry: Registry, overrides: dict) -> Registry:
    """`registry_overrides/<domain>.yaml`: `rename: {id: name}`, `merge: [[keep_id, absorbed_id, ...]]`, `drop: [id]`.

    Overrides never delete rows: a dropped or merged entity stays in the registry with its status, so its id is
    never reissued and opinions already extracted for it can be traced.
    """
    index = registry.by_id()
    for entity_id, name in (overrides.get("rename") or {}).items():
        if entity_id not in index:
            raise ValueError(f"registry override renames unknown entity {entity_id!r}")
        index[entity_id].name = str(name)
    for group in overrides.get("merge") or []:
        keep, *absorbed = group
        for entity_id in [keep, *absorbed]:
            if entity_id not in index:
                raise ValueError(f"registry override merges unknown entity {entity_id!r}")
        for entity_id in absorbed:
            source = index[entity_id]
            for alias, count in source.aliases.items():
                index[keep].aliases[alias] = index[keep].aliases.get(alias, 0) + count
            source.status, source.merged_into = "merged", keep
    for entity_id in overrides.get("drop") or []:
        if entity_id not in index:
            raise ValueError(f"registry override drops unknown entity {entity_id!r}")
        index[entity_id].status = "dropped"
    return registry

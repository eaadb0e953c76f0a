"""Which entities a question is about, read the way its asker means it.

The alias matcher (`matching.AliasMatcher`) says which registry entities a question's words name. Three rules turn
its mentions into what an answer should be about, each general English, none fitted to a domain:

* **The domain's container steps aside.** An entity named in more than half of the domain's documents is what the
  corpus as a whole is about ("seller" on a sellers' forum, "hotel" in hotel reviews), not one aspect of it; a
  majority is the plain meaning of "what the corpus is about", not a tuned cut. Likewise the *holder* of the
  opinion asked about: an entity named before the question's opinion verb ("How do **sellers** feel about …",
  "What do **guests** think of …") is who holds the views, not what they are about, and an owner named in the
  possessive ("the **hotel's** breakfast") frames what it owns, as do the words of asking (a registry entity
  "opinion" in "what are the **opinions** on …", "rate" in "how do people **rate** …"). Each gives way to anything
  else the question names, and is the answer's subject only when nothing else is named.
* **A head noun finds its group.** English compounds are head-final: "customer support" is a kind of support. When
  the question's words name no entity exactly, the last noun of a phrase is matched against the head nouns of the
  registry's names (`taxonomy.head_word`: "support team" → support, "seller support" → support), so the question
  is answered about the entities that are kinds of what it asks about rather than about whatever retrieval turned
  up.
* **Near-duplicates are answered together.** Entities whose names share a head noun and that the registry's
  clustering filed under one tier 2 (one aspect area: their contexts embed close, see `taxonomy.build_entities`)
  form a group: "support team", "seller support", "chat support", and "support agents" (the people of support).
  A question that reaches the head through a compound that is no entity of its own ("customer support"), or
  names the bare head when it is no entity, is answered from the union of the members' opinions, and the answer
  names the members. A question that names an entity exactly ("the support team", or "support" where that is an
  entity) is answered about that entity: its words chose it. The registry itself is not changed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import duckdb

from oprag_pipeline.registry.matching import AliasMatcher, Mention, phrase_key, phrase_words, word_key
from oprag_pipeline.registry.taxonomy import head_word
from oprag_pipeline.schema import RegistryEntity

GROUP_PREFIX = "group:"
CONTAINER_SHARE = 0.5
"""An entity named in more than this share of the domain's documents is the domain's container: a majority."""
CONTAINER_SAMPLE = 2000
"""Documents read to find the container (a deterministic sample of larger domains)."""

OPINION_VERBS = frozenset(
    """
    feel feels felt think thinks thought say says said rate rates rated like likes liked dislike dislikes find finds
    found view views see sees describe describes complain complains complained praise praises praised love loves
    loved hate hates hated experience experienced perceive perceives consider considers prefer prefers
    """.split()
)
"""English verbs whose subject holds the opinion a question asks about ("how do sellers *feel* about …")."""

PEOPLE_HEADS = frozenset("agent staff representative rep employee worker personnel person people officer".split())
"""English nouns that, as the head of a compound, name the people of what their modifier names ("support agents",
"cleaning staff"): such a compound joins its modifier's group, as a light head (`taxonomy.LIGHT_HEADS`) does."""

ASKING_NOUNS = frozenset(
    """
    opinion view viewpoint thought feeling impression advice suggestion recommendation difference comparison
    experience take verdict sentiment perception attitude reaction consensus
    """.split()
)
"""English nouns a question uses to ask for views ("what are the *opinions* on …", "what *difference* does … make",
"what *advice* do people give about …"). A registry entity with such a name (mined from text that said "in my
opinion") frames the question, not its target, when the question names another entity: with `OPINION_VERBS`
("how do people *rate* …"), the words of asking."""

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_POSSESSIVE = ("'s", "\u2019s")


@dataclass(frozen=True)
class EntityGroup:
    """Near-duplicate entities answered together: kinds of one head noun in one aspect area."""

    group_id: str
    head: str
    members: tuple[str, ...]  # entity ids, the most discussed first
    member_names: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.head} ({', '.join(self.member_names)})"


@dataclass(frozen=True)
class QuestionTargets:
    """What a question is about, in answer order: entity ids, or group ids (`EntityGroup.group_id`)."""

    targets: list[str]
    named: bool  # the question's words named an entity exactly (not via a head noun)
    via_head: dict[str, str] = field(default_factory=dict)  # target → the question's word that reached it
    set_aside: list[str] = field(default_factory=list)  # container or holder entities that gave way


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(word_key(m.group(0)), m.start(), m.end()) for m in _WORD.finditer(text)]


def find_containers(
    entities: Sequence[RegistryEntity], texts: Iterable[str], share: float = CONTAINER_SHARE
) -> set[str]:
    """Entities named (by name or alias) in more than `share` of `texts`."""
    matcher = AliasMatcher(entities)
    documents = 0
    named: Counter[str] = Counter()
    for text in texts:
        documents += 1
        named.update(set(matcher.entities_in(text)))
    if not documents:
        return set()
    return {entity_id for entity_id, n in named.items() if n / documents > share}


def find_groups(entities: Sequence[RegistryEntity], mentions: Mapping[str, int]) -> list[EntityGroup]:
    """Groups of two or more entities in one tier 2 whose names share a head noun ("support team", "seller support",
    "chat support"), joined by the people of that head ("support agents", see `PEOPLE_HEADS`)."""
    by_tier2: dict[str, list[RegistryEntity]] = {}
    for entity in entities:
        by_tier2.setdefault(entity.tier2_name or entity.entity_id, []).append(entity)
    groups: list[EntityGroup] = []
    for members in by_tier2.values():
        heads: dict[str, list[RegistryEntity]] = {}
        for entity in members:
            key = phrase_key(entity.name)
            if key:
                heads.setdefault(head_word(key), []).append(entity)
        for head, with_head in heads.items():
            chosen = {e.entity_id: e for e in with_head}
            if not any(len(phrase_key(e.name).split()) >= 2 for e in with_head):
                continue  # a lone word is no compound family
            for entity in members:
                words = phrase_key(entity.name).split()
                # "support agents" are the people of support
                if (
                    entity.entity_id not in chosen
                    and len(words) >= 2
                    and words[-2] == head
                    and words[-1] in PEOPLE_HEADS
                ):
                    chosen[entity.entity_id] = entity
            if len(chosen) < 2:
                continue
            ordered = sorted(chosen.values(), key=lambda e: (-mentions.get(e.entity_id, 0), e.name))
            groups.append(
                EntityGroup(
                    f"{GROUP_PREFIX}{head}", head, tuple(e.entity_id for e in ordered), tuple(e.name for e in ordered)
                )
            )
    # an entity in two families (a name holding two heads) stays with the larger one
    groups.sort(key=lambda g: (-len(g.members), g.head))
    taken: set[str] = set()
    kept: list[EntityGroup] = []
    for group in groups:
        members = tuple(m for m in group.members if m not in taken)
        if len(members) < 2:
            continue
        names = tuple(n for m, n in zip(group.members, group.member_names, strict=True) if m in members)
        kept.append(EntityGroup(group.group_id, group.head, members, names))
        taken.update(members)
    return kept


class QuestionMatcher:
    """Question → the entities (or groups) an answer should be about; see the module docstring."""

    def __init__(
        self,
        entities: Sequence[RegistryEntity],
        *,
        mentions: Mapping[str, int] | None = None,
        containers: Iterable[str] = (),
        groups: Sequence[EntityGroup] | None = None,
    ) -> None:
        self.entities = {e.entity_id: e for e in entities}
        self.mentions = dict(mentions or {})
        self.matcher = AliasMatcher(entities)
        self.containers = set(containers)
        self.groups = {g.group_id: g for g in (find_groups(entities, self.mentions) if groups is None else groups)}
        self.group_of_head = {g.head: g.group_id for g in self.groups.values()}
        self.group_of_member = {m: g.group_id for g in self.groups.values() for m in g.members}
        # head noun → entities whose name ends in it (singletons too), the most discussed first
        self.by_head: dict[str, list[str]] = {}
        for entity in sorted(entities, key=lambda e: (-self.mentions.get(e.entity_id, 0), e.name)):
            key = phrase_key(entity.name)
            if key:
                self.by_head.setdefault(head_word(key), []).append(entity.entity_id)
        self.vocabulary = {w for e in entities for phrase in (e.name, *e.aliases) for w in phrase_words(phrase)}

    def _holders(self, question: str, mentions: Sequence[Mention], heads_at: Sequence[int] = ()) -> set[str]:
        """Entities that frame the question rather than being asked about, when something else is named (an entity,
        or a head noun at `heads_at`): the holders (named before the question's first opinion verb, with something
        named after it), the owners (named in the possessive, "the hotel's breakfast", "sellers' fees") and the
        words of asking ("the *opinions* on …", "how do people *rate* …")."""
        owners = {
            m.entity_id
            for m in mentions
            if question[m.end : m.end + 2].lower() in _POSSESSIVE
            or question[m.end - 1 : m.end + 1] in ("s'", "s\u2019")
        }
        holders: set[str] = set()
        verb_at = next((start for key, start, _ in _words(question) if key in OPINION_VERBS), None)
        if verb_at is not None:
            before = {m.entity_id for m in mentions if m.end <= verb_at}
            after = {m.entity_id for m in mentions if m.start > verb_at}
            holders = before - after if after or any(at > verb_at for at in heads_at) else set()
        asking = {
            m.entity_id
            for m in mentions
            if all(w in ASKING_NOUNS or w in OPINION_VERBS for w in phrase_words(question[m.start : m.end]))
        }
        framing = owners | holders | asking
        return framing if {m.entity_id for m in mentions} - framing or heads_at else set()

    def _head_matches(self, question: str, covered: Sequence[Mention]) -> list[tuple[str, str, int]]:
        """(target, word, offset) for each head noun of the question outside the alias matches: the last registry
        word of a run of registry words ("customer support" → support), matched to a group, else the entity named
        after it."""
        words = _words(question)
        found: list[tuple[str, str, int]] = []
        for index, (key, start, end) in enumerate(words):
            if any(m.start <= start < m.end for m in covered):
                continue
            following = words[index + 1][0] if index + 1 < len(words) else None
            if following in self.vocabulary and following not in OPINION_VERBS:
                continue  # a modifier: English compounds are head-final
            target = self.group_of_head.get(key)
            if target is None and self.by_head.get(key):
                target = self.by_head[key][0]
            if target is not None:
                found.append((target, question[start:end], start))
        return found

    def resolve(self, question: str) -> QuestionTargets:
        mentions = self.matcher.mentions(question)
        named = list(dict.fromkeys(m.entity_id for m in mentions))
        # an entity named exactly is answered about itself, a group's head included: its words chose it
        target_of = {e: e for e in named}
        targets = list(dict.fromkeys(target_of.values()))
        heads = [h for h in self._head_matches(question, mentions) if h[0] not in targets]
        framing = self._holders(question, mentions, [at for _, _, at in heads])
        aside_entities = {e for e in named if e in self.containers} | framing
        aside = {target_of[e] for e in aside_entities} - {target_of[e] for e in named if e not in aside_entities}
        via_head: dict[str, str] = {}
        if all(t in aside for t in targets):  # nothing specific named exactly: the question's head nouns decide
            for target, word, _ in heads:
                if target not in targets and target not in aside:
                    targets.append(target)
                    via_head[target] = word
        specific = [t for t in targets if t not in aside]
        set_aside = [t for t in targets if t in aside] if specific else []
        if specific:
            targets = specific
        named_specific = any(target_of[e] not in aside for e in named)
        return QuestionTargets(targets, named_specific, via_head, set_aside)

    def display_name(self, target: str) -> str:
        if target in self.groups:
            return self.groups[target].name
        entity = self.entities.get(target)
        return entity.name if entity else target

    def group_entity(self, group_id: str) -> RegistryEntity:
        """A group as one registry entity (its head as the name, every member's name and aliases as aliases), for
        what finds an entity's words in text (quotes that name it)."""
        group = self.groups[group_id]
        aliases = sorted(
            {phrase for m in group.members for phrase in (self.entities[m].name, *self.entities[m].aliases)}
        )
        first = self.entities[group.members[0]]
        return RegistryEntity(group_id, group.head, tuple(aliases), first.tier1_name, first.tier2_name)


def load_question_matcher(
    conn: duckdb.DuckDBPyConnection, domain: str, entities: Sequence[RegistryEntity]
) -> QuestionMatcher:
    """The matcher of a domain: opinion counts from `opinions`, containers from a sample of `raw_documents`."""
    try:
        mentions = dict(
            conn.execute("SELECT entity_id, count(*) FROM opinions WHERE domain = ? GROUP BY 1", [domain]).fetchall()
        )
    except duckdb.CatalogException:
        mentions = {}
    try:
        texts = [
            text
            for (text,) in conn.execute(
                "SELECT text FROM raw_documents WHERE domain = ? ORDER BY md5(doc_id) LIMIT ?",
                [domain, CONTAINER_SAMPLE],
            ).fetchall()
        ]
    except duckdb.CatalogException:  # a warehouse without the ingest's table (a test's, a partial copy)
        texts = []
    return QuestionMatcher(entities, mentions=mentions, containers=find_containers(entities, texts))


__all__ = [
    "CONTAINER_SHARE",
    "GROUP_PREFIX",
    "EntityGroup",
    "QuestionMatcher",
    "QuestionTargets",
    "find_containers",
    "find_groups",
    "load_question_matcher",
]

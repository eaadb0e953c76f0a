"""What every writer returns: the prose a reader sees, and the claims in it a machine can check.

Keeping the claims (stated shares, quotes with their sources) beside the prose is what makes an answer measurable:
fidelity is computed from the shares it states, grounding from the quotes it uses, without parsing prose.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

SIDES = ("positive", "neutral", "negative")


@dataclass(frozen=True)
class Quote:
    """A verbatim span of a retrieved passage, cited by its document."""

    doc_id: str
    text: str
    entity_id: str | None = None
    sentiment: str | None = None  # the side it is quoted for (None: the writer did not say)
    point_id: str = ""
    grounded: bool = True  # found verbatim in the retrieved text of that document


@dataclass(frozen=True)
class StatedShares:
    """The distribution an answer states for one entity: shares per side, and per σ-level when it gives them."""

    entity_id: str
    entity_name: str
    shares: Mapping[str, float]  # side → share; sums to 1 over the sides stated
    sigma_shares: Mapping[int, float] | None = None  # σ-level → share, when the answer states intensities too
    basis: int = 0  # opinions the shares were computed from (0: not said)


@dataclass
class Answer:
    question: str
    domain: str
    kb: str
    mode: str
    k: int
    writer: str
    text: str
    entity_ids: list[str] = field(default_factory=list)  # the entities the answer is about
    stated: list[StatedShares] = field(default_factory=list)
    quotes: list[Quote] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)  # what it could not cover, said to the reader
    flags: list[str] = field(default_factory=list)  # validation problems (LLM writers), never shown as fact
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None: the writer model's price is unknown
    scope: str | None = None  # the one `entity_scope` the answer is restricted to (`generate/scope.py`)

    def stated_for(self, entity_id: str) -> StatedShares | None:
        return next((s for s in self.stated if s.entity_id == entity_id), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for stated in data["stated"]:
            stated["shares"] = dict(stated["shares"])
            if stated["sigma_shares"] is not None:
                stated["sigma_shares"] = {str(k): v for k, v in stated["sigma_shares"].items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        values = dict(data)
        values["stated"] = [
            StatedShares(
                entity_id=s["entity_id"],
                entity_name=s["entity_name"],
                shares=dict(s["shares"]),
                sigma_shares={int(k): float(v) for k, v in s["sigma_shares"].items()}
                if s.get("sigma_shares")
                else None,
                basis=int(s.get("basis") or 0),
            )
            for s in values.get("stated", [])
        ]
        values["quotes"] = [Quote(**q) for q in values.get("quotes", [])]
        return cls(**values)

"""Phrase banks for the demo corpus: entities, sentence frames, emotions, evidence, filler.

All phrasing here was written for this project (nothing is copied from real corpora). The point of the banks is
*variety that hides the truth from shallow readers*: a keyword lexicon should not be able to read the planted
sentiment back, while a careful human (or a good extractor) can. Hence implied opinions ("we waited 40 minutes at
reception"), negations ("the bed was not uncomfortable"), comparisons with the past, hedges, rare sarcasm, emotions
in words, and evidence markers.

Template mini-language (compiled by `generator.py`):

- `{a}` — a random alias of the entity (noun phrase); `[text]` — a fixed alias written inline (append `|p` inside
  the brackets when it is plural, e.g. `[payouts|p]`). A template without either mentions the entity implicitly.
- `{be}` / `{bent}` / `{have}` / `{could}` — verb forms agreeing with the alias and the domain's tense
  (hotel reviews tell a past stay; forum posts mostly speak in the present).
- `{P}`, `{P2}` — positive adjectives of the entity; `{N}`, `{N2}` — negative ones.
- `{n}` — a number whose range depends on the planted intensity (implied templates carry three ranges:
  low, medium, high); `{r}` — a small number with no opinion in it.
- `{we}`, `{other}`, `{year}`, `{month}`, `{weekday}`, `{ordinal}`, `{hotel}` — colour.

Implied templates are `(text, spec)` where `spec` is either a string of allowed intensities (`"lmh"`, `"mh"`, …)
or three `(lo, hi)` ranges for `{n}` (low, medium, high intensity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oprag_pipeline.schema import Emotion, EvidenceType

Range = tuple[int, int]
Spec = str | tuple[Range, Range, Range]
Implied = tuple[str, Spec]

SENTIMENTS = ("positive", "neutral", "negative")
INTENSITIES = ("low", "medium", "high")
EMOTIONS = tuple(e.value for e in Emotion)  # the closed set of oprag_pipeline/schema.py
EVIDENCE_TYPES = tuple(e.value for e in EvidenceType)  # the closed set of oprag_pipeline/schema.py

#: The σ-scale of docs/design.md: neutral is 0 whatever the intensity.
SIGMA = {
    ("positive", "high"): 30,
    ("positive", "medium"): 20,
    ("positive", "low"): 10,
    ("negative", "low"): -10,
    ("negative", "medium"): -20,
    ("negative", "high"): -30,
}
IMPACT_SCORE = {"high": 30, "medium": 20, "low": 10}


@dataclass(frozen=True)
class EntitySpec:
    """One opinion target with its surface forms and its *designed* opinion distribution.

    `distribution` maps sentiment -> share. For a shifting entity it is the distribution before `shift_date`
    and `shift_after` the one from that date on. `weight` is how often the entity is mentioned relative to others.
    """

    entity_id: str
    name: str
    tier1: str
    tier2: str
    short: str
    aliases: tuple[str, ...]
    pos: tuple[str, ...]
    neg: tuple[str, ...]
    neutral: tuple[str, ...]
    implied_pos: tuple[Implied, ...]
    implied_neg: tuple[Implied, ...]
    distribution: dict[str, float]
    design: str
    weight: float = 1.0
    data_pos: tuple[Implied, ...] = ()
    data_neg: tuple[Implied, ...] = ()
    shift_date: str | None = None
    shift_after: dict[str, float] | None = None
    note: str = ""
    minority_sentiment: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _d(pos: float, neu: float, neg: float) -> dict[str, float]:
    return {"positive": pos, "neutral": neu, "negative": neg}


# ---------------------------------------------------------------------------------------------------------------
# Hotels
# ---------------------------------------------------------------------------------------------------------------

HOTEL_NAMES = (
    "Harbourview Grand Hotel",
    "The Linden Court",
    "Alderbrook Inn & Suites",
    "Hotel Meridiana",
    "Saltmarsh Lodge",
)

HOTEL_ENTITIES: tuple[EntitySpec, ...] = (
    EntitySpec(
        "checkin",
        "check-in",
        "service",
        "front desk",
        "check-in",
        aliases=(
            "check-in",
            "the check-in",
            "the front desk",
            "reception",
            "the check-in process",
            "the reception desk",
            "the arrival process",
        ),
        pos=("quick", "smooth", "painless", "efficient", "organised", "straightforward", "speedy"),
        neg=("slow", "chaotic", "disorganised", "sluggish", "confusing", "understaffed", "bureaucratic"),
        neutral=(
            "[check-in] {be} from 3 pm, which is standard",
            "[reception] {be} staffed around the clock",
            "[the front desk] {be} to the right of the entrance",
            "we went to [reception] to pick up our keys at around {r} pm",
        ),
        implied_pos=(
            ("we had our keys within {n} minutes of walking in", ((9, 14), (4, 8), (1, 3))),
            ("[check-in] took {n} minutes, bags and all", ((10, 14), (5, 9), (2, 4))),
            ("[the front desk] let us into the room at 11 am without us even asking", "mh"),
            ("[reception] remembered our names from our last visit", "h"),
            ("[the front desk] had printed a little map with our dinner reservation marked on it", "h"),
        ),
        implied_neg=(
            ("we waited {n} minutes at [the front desk]", ((10, 15), (20, 40), (50, 95))),
            ("[check-in] took {n} minutes because one person was working", ((10, 15), (20, 40), (50, 95))),
            ("there were {n} people queueing at [reception] and a single clerk", ((4, 6), (7, 12), (15, 25))),
            ("our room still wasn't ready {n} minutes after [check-in] time", ((20, 40), (45, 90), (120, 180))),
            ("[reception] had no record of our booking and we had to show the confirmation twice", "mh"),
            ("we were sent back and forth between [the front desk] and the porter {n} times", ((2, 2), (3, 3), (4, 5))),
        ),
        distribution=_d(0.40, 0.15, 0.45),
        design="split",
        weight=1.3,
    ),
    EntitySpec(
        "housekeeping",
        "housekeeping",
        "service",
        "staff",
        "housekeeping",
        aliases=(
            "housekeeping",
            "the housekeeping team",
            "the cleaners|p",
            "the cleaning staff",
            "the maids|p",
            "the housekeeping staff",
        ),
        pos=("thorough", "attentive", "friendly", "discreet", "reliable", "meticulous"),
        neg=("sloppy", "careless", "inconsistent", "forgetful", "unreliable", "intrusive"),
        neutral=(
            "[housekeeping] came by at around {r} am each day",
            "[daily cleaning] {be} optional here, you have to ask for it",
            "[the cleaning staff] leave a card with their names on the desk",
        ),
        implied_pos=(
            ("[housekeeping] even tidied the cables on the desk and left a little note", "mh"),
            ("fresh towels appeared every day without us asking", "lm"),
            ("[the cleaning staff] spotted a dripping tap and had it fixed before we got back", "h"),
            ("the room was made up by {n} every single morning", ((11, 11), (10, 10), (9, 9))),
        ),
        implied_neg=(
            ("[housekeeping] skipped our room {n} days in a row", ((2, 2), (3, 3), (4, 5))),
            ("we came back at {n} pm and the room still hadn't been made up", ((3, 3), (5, 6), (7, 9))),
            ("[the maids|p] walked in twice while the do-not-disturb sign was up", "mh"),
            ("used towels were left on the floor after [housekeeping] had been in", "m"),
            ("the same coffee cup sat on the desk for {n} days", ((2, 2), (3, 3), (4, 6))),
        ),
        distribution=_d(0.68, 0.17, 0.15),
        design="skewed",
    ),
    EntitySpec(
        "concierge",
        "concierge",
        "service",
        "staff",
        "concierge",
        aliases=(
            "the concierge",
            "the concierge desk",
            "the concierge team",
            "the guest services team",
            "guest services",
        ),
        pos=("helpful", "knowledgeable", "resourceful", "welcoming", "responsive", "informed"),
        neg=("unhelpful", "dismissive", "clueless", "indifferent", "rude", "pushy"),
        neutral=(
            "[the concierge] can book taxis and theatre tickets",
            "[the concierge desk] {be} open until {r} pm",
            "we asked [guest services] for a city map",
        ),
        implied_pos=(
            ("[the concierge] got us a table at a place that was fully booked online", "mh"),
            (
                "[the concierge] printed our boarding passes and had a cab outside in {n} minutes",
                ((10, 15), (5, 9), (2, 4)),
            ),
            ("[guest services] sorted out a late checkout within minutes of us asking", "m"),
        ),
        implied_neg=(
            ("[the concierge] sent us to a restaurant that had closed months ago", "mh"),
            ("we asked [the concierge] for a taxi and it never showed up", "mh"),
            ("[the concierge desk] was empty every time we walked past", "lm"),
            ("[the concierge] spent more time on his phone than talking to us", "mh"),
        ),
        distribution=_d(0.55, 0.30, 0.15),
        design="skewed",
        weight=0.8,
    ),
    EntitySpec(
        "bed",
        "bed",
        "room",
        "comfort",
        "beds",
        aliases=("the bed", "the mattress", "the beds|p", "the pillows|p", "our bed"),
        pos=("comfortable", "supportive", "cosy", "comfy", "huge", "soft"),
        neg=("uncomfortable", "lumpy", "saggy", "hard", "creaky", "worn"),
        neutral=(
            "[the beds|p] {be} two singles pushed together",
            "[the mattress] {be} on the firm side",
            "[the bed] {be} a standard queen",
        ),
        implied_pos=(
            ("we slept {n} hours straight on the first night", ((7, 7), (8, 9), (10, 11))),
            ("I asked at reception which brand [the mattress] was so I could order one", "h"),
            ("no back pain for once after a week in [the bed]", "m"),
        ),
        implied_neg=(
            ("I could feel every spring in [the mattress]", "mh"),
            ("woke up with a stiff back {n} mornings in a row", ((2, 2), (3, 3), (4, 5))),
            ("[the bed] sagged so much we rolled into the middle all night", "mh"),
            ("[the pillows|p] were flat as pancakes", "lm"),
        ),
        distribution=_d(0.62, 0.20, 0.18),
        design="skewed",
    ),
    EntitySpec(
        "air_conditioning",
        "air conditioning",
        "room",
        "comfort",
        "AC",
        aliases=("the air conditioning", "the AC", "the aircon", "the air con unit", "the climate control"),
        pos=("quiet", "effective", "powerful", "responsive", "adjustable"),
        neg=("noisy", "weak", "useless", "broken", "erratic", "rattly"),
        neutral=(
            "[the AC] {be} controlled from a panel by the door",
            "[the air conditioning] {be} set centrally, you can only tweak it by a couple of degrees",
        ),
        implied_pos=(
            (
                "the room was down to {n} degrees within minutes of switching on [the AC]",
                ((24, 24), (22, 23), (19, 21)),
            ),
            ("even in the August heat the room stayed cool", "mh"),
        ),
        implied_neg=(
            ("the room never got below {n} degrees even with [the AC] on full", ((25, 26), (27, 28), (29, 31))),
            ("[the aircon] rattled all night and kept waking us up", "mh"),
            ("we had to call maintenance {n} times about [the air conditioning]", ((2, 2), (3, 3), (4, 5))),
        ),
        distribution=_d(0.35, 0.30, 0.35),
        design="three_way",
        weight=0.8,
    ),
    EntitySpec(
        "bathroom",
        "bathroom",
        "room",
        "cleanliness",
        "bathroom",
        aliases=("the bathroom", "the shower", "the ensuite", "the shower room", "the bathroom floor"),
        pos=("spotless", "clean", "sparkling", "immaculate", "fresh", "modern"),
        neg=("dirty", "grimy", "mouldy", "dated", "smelly", "stained"),
        neutral=(
            "[the bathroom] {be} shower only, no bathtub",
            "[the bathroom] had a walk-in shower and a separate toilet",
        ),
        implied_pos=(
            ("you could have eaten off [the bathroom floor]", "h"),
            ("not a single hair or water mark anywhere in [the bathroom]", "mh"),
        ),
        implied_neg=(
            ("there was hair in [the shower] when we arrived", "m"),
            ("black mould all around the edges of [the shower]", "mh"),
            ("[the bathroom] smelled of drains for our whole stay", "mh"),
            ("we counted {n} hairs in the plughole of [the shower] on day one", ((2, 3), (4, 6), (10, 20))),
        ),
        distribution=_d(0.50, 0.15, 0.35),
        design="split",
    ),
    EntitySpec(
        "street_noise",
        "street noise",
        "room",
        "noise",
        "noise",
        aliases=(
            "the street noise",
            "the noise from the street",
            "the traffic noise",
            "the noise at night",
            "the noise levels|p",
            "the noise",
        ),
        pos=("minimal", "faint", "negligible", "muted", "bearable"),
        neg=("unbearable", "constant", "loud", "awful", "relentless", "intrusive"),
        neutral=(
            "[the noise from the street] {be} what you'd expect in a city centre",
            "we had a courtyard room, so [the street noise] {be} hard for us to judge",
        ),
        implied_pos=(
            ("slept with the window open and heard nothing but birds", "mh"),
            ("the double glazing kept [the traffic noise] out completely", "h"),
            ("we were on the main road side and still didn't need earplugs", "m"),
        ),
        implied_neg=(
            ("we were woken at {n} am by bin lorries", ((7, 7), (6, 6), (4, 5))),
            ("I used earplugs every night and could still hear [the traffic noise]", "mh"),
            ("the club across the road played music until {n} in the morning", ((1, 1), (2, 3), (4, 5))),
            ("[the noise at night] kept us awake until the early hours", "mh"),
        ),
        distribution=_d(0.25, 0.20, 0.55),
        design="skewed",
    ),
    EntitySpec(
        "breakfast",
        "breakfast buffet",
        "food",
        "breakfast",
        "breakfast",
        aliases=(
            "the breakfast buffet",
            "breakfast",
            "the breakfast",
            "the morning buffet",
            "the breakfast spread",
            "the buffet",
        ),
        pos=("generous", "delicious", "varied", "fresh", "excellent", "plentiful"),
        neg=("sad", "stale", "limited", "overpriced", "repetitive", "lukewarm"),
        neutral=(
            "[breakfast] {be} served from 7 to 10:30",
            "[the breakfast buffet] {be} included in our rate",
            "[breakfast] {be} in the basement dining room",
        ),
        implied_pos=(
            ("there were {n} kinds of fresh pastries at [the breakfast buffet]", ((4, 5), (6, 9), (10, 15))),
            ("the chef at [the breakfast buffet] made omelettes to order", "m"),
            ("we skipped lunch every day thanks to [breakfast]", "mh"),
        ),
        implied_neg=(
            ("[the breakfast buffet] ran out of eggs before {n} am", ((10, 10), (9, 9), (8, 8))),
            ("[the breakfast] was the same {n} items every single day", ((8, 10), (5, 7), (3, 4))),
            (
                "we paid {n} euros each for [the breakfast] and got a dry croissant and instant coffee",
                ((12, 16), (18, 24), (25, 35)),
            ),
            ("the scrambled eggs at [the buffet] were swimming in water", "mh"),
        ),
        distribution=_d(0.80, 0.14, 0.06),
        design="shift",
        weight=2.0,
        shift_date="2024-03-01",
        shift_after=_d(0.18, 0.20, 0.62),
        note="a new catering contractor took over breakfast on 2024-03-01: praised before, criticised after",
    ),
    EntitySpec(
        "restaurant",
        "hotel restaurant",
        "food",
        "restaurant",
        "restaurant",
        aliases=(
            "the restaurant",
            "the hotel restaurant",
            "dinner at the hotel",
            "the dining room",
            "the in-house restaurant",
        ),
        pos=("excellent", "delicious", "superb", "tasty", "inventive", "affordable"),
        neg=("bland", "overpriced", "mediocre", "slow", "greasy", "pretentious"),
        neutral=(
            "[the restaurant] {be} open for dinner only",
            "[the hotel restaurant] takes reservations at weekends",
            "we only had one meal at [the restaurant]",
        ),
        implied_pos=(
            ("we booked [the restaurant] again for our last night", "mh"),
            ("the waiter at [the restaurant] remembered our wine from the night before", "m"),
            (
                "the tasting menu at [the restaurant] was {n} courses and we finished every one",
                ((4, 4), (5, 6), (7, 9)),
            ),
        ),
        implied_neg=(
            ("our mains at [the restaurant] took {n} minutes to arrive", ((30, 40), (45, 60), (75, 100))),
            ("[the restaurant] charged {n} euros for a plain pasta", ((18, 20), (22, 26), (28, 35))),
            ("we sent the steak back twice at [the restaurant]", "mh"),
        ),
        distribution=_d(0.45, 0.20, 0.35),
        design="split",
    ),
    EntitySpec(
        "bar",
        "hotel bar",
        "food",
        "bar",
        "bar",
        aliases=("the bar", "the hotel bar", "the lobby bar", "the rooftop bar", "the bar downstairs"),
        pos=("lively", "cosy", "stylish", "relaxed", "welcoming"),
        neg=("overpriced", "dingy", "empty", "noisy", "soulless"),
        neutral=(
            "[the bar] {be} open until midnight",
            "[the lobby bar] {be} on the ground floor",
            "[happy hour] {be} from 5 to 7",
        ),
        implied_pos=(
            ("the bartender at [the bar] made us a cocktail that wasn't even on the menu", "mh"),
            ("we ended up at [the bar] every evening", "m"),
        ),
        implied_neg=(
            ("a small beer at [the bar] was {n} euros", ((8, 9), (10, 12), (13, 16))),
            ("[the lobby bar] closed at {n} pm on a Saturday", ((11, 11), (10, 10), (9, 9))),
            ("we waited {n} minutes to get served at [the bar]", ((10, 15), (20, 30), (35, 50))),
        ),
        distribution=_d(0.60, 0.25, 0.15),
        design="skewed",
        weight=0.8,
    ),
    EntitySpec(
        "public_transport",
        "public transport",
        "location",
        "access",
        "transport links",
        aliases=(
            "the public transport links|p",
            "the metro station",
            "the transport connections|p",
            "the tram stop",
            "access to public transport",
            "the train connections|p",
        ),
        pos=("convenient", "excellent", "unbeatable", "handy", "ideal", "practical"),
        neg=("awkward", "inconvenient", "poor", "limited", "remote"),
        neutral=(
            "[the public transport links|p] {be} similar to other hotels in the area",
            "we mostly used taxis, so can't say much about [the public transport links|p]",
        ),
        implied_pos=(
            ("[the metro station] is a {n} minute walk from the door", ((8, 10), (4, 6), (1, 2))),
            ("we were at the airport in {n} minutes by train", ((40, 50), (25, 35), (15, 20))),
            ("[the tram stop] is literally outside the front door", "h"),
        ),
        implied_neg=(
            ("the nearest [metro stop] is a {n} minute walk uphill", ((12, 15), (18, 25), (30, 40))),
            ("we spent {n} euros on taxis because the buses stop at 9 pm", ((30, 50), (60, 100), (120, 200))),
        ),
        distribution=_d(0.92, 0.06, 0.02),
        design="near_unanimous",
        weight=1.3,
    ),
    EntitySpec(
        "neighbourhood",
        "neighbourhood",
        "location",
        "surroundings",
        "area",
        aliases=(
            "the neighbourhood",
            "the area",
            "the surrounding streets|p",
            "the local area",
            "the district",
            "the area around the hotel",
        ),
        pos=("charming", "safe", "lively", "leafy", "quiet", "vibrant"),
        neg=("sketchy", "run-down", "dodgy", "deserted", "grim", "seedy"),
        neutral=(
            "[the area] {be} mostly offices and a few cafes",
            "[the neighbourhood] {be} residential",
            "[the district] {be} a {r} minute taxi ride from the centre",
        ),
        implied_pos=(
            ("there were {n} good restaurants within a block of the hotel", ((3, 4), (5, 8), (10, 15))),
            ("we walked back through [the area] late at night without a second thought", "mh"),
        ),
        implied_neg=(
            ("the receptionist told us not to walk around [the area] after dark", "mh"),
            ("there was broken glass all over [the surrounding streets|p]", "mh"),
            ("we were asked for money {n} times on the short walk from the station", ((2, 2), (3, 4), (6, 9))),
        ),
        distribution=_d(0.70, 0.14, 0.16),
        design="skewed",
    ),
    EntitySpec(
        "room_rate",
        "room rate",
        "value",
        "price",
        "price",
        aliases=("the room rate", "the price", "the price we paid", "the nightly rate", "the cost", "the rate we got"),
        pos=("fair", "reasonable", "unbeatable", "good", "competitive"),
        neg=("steep", "excessive", "inflated", "exorbitant", "unjustifiable"),
        neutral=(
            "[the room rate] {be} about average for the city",
            "we paid [the nightly rate] through a booking site",
            "[the price] {be} what we expected for the area",
        ),
        implied_pos=(
            ("we paid {n} euros a night for a city-centre room", ((140, 160), (110, 130), (70, 95))),
            ("[the price] was half what we paid last year at the place next door", "h"),
        ),
        implied_neg=(
            ("{n} euros a night for a room with no window", ((180, 200), (220, 260), (300, 380))),
            ("[the room rate] jumped {n}% when we tried to extend by one night", ((15, 20), (30, 45), (60, 90))),
            ("we could have stayed somewhere much nicer for [the price]", "m"),
        ),
        distribution=_d(0.48, 0.17, 0.35),
        design="split",
    ),
    EntitySpec(
        "extra_charges",
        "extra charges",
        "value",
        "price",
        "fees",
        aliases=(
            "the extra charges|p",
            "the resort fee",
            "the parking fee",
            "the hidden fees|p",
            "the city tax",
            "the add-on charges|p",
        ),
        pos=("transparent", "reasonable", "fair", "modest", "upfront"),
        neg=("sneaky", "excessive", "outrageous", "steep", "unexpected"),
        neutral=("[the city tax] {be} paid at check-out", "[the parking fee] {be} charged per night"),
        implied_pos=(
            ("nothing appeared on the final bill that we hadn't agreed to", "mh"),
            ("[the parking fee] was included in our package", "m"),
        ),
        implied_neg=(
            ("[the resort fee] added {n} euros a night to the bill", ((10, 15), (20, 35), (40, 60))),
            ("we were charged {n} euros for a bottle of water we never opened", ((4, 5), (6, 9), (10, 15))),
            ("[the parking fee] was {n} euros a day and nobody told us in advance", ((20, 25), (30, 40), (45, 60))),
        ),
        distribution=_d(0.15, 0.20, 0.65),
        design="skewed",
        weight=0.9,
    ),
    EntitySpec(
        "wifi",
        "wifi",
        "amenities",
        "connectivity",
        "wifi",
        aliases=(
            "the wifi",
            "the Wi-Fi",
            "the internet",
            "the internet connection",
            "the wireless",
            "the in-room wifi",
        ),
        pos=("fast", "reliable", "solid", "strong", "quick"),
        neg=("slow", "patchy", "unreliable", "useless", "flaky", "spotty"),
        neutral=("[the wifi] {be} free in the lobby", "[the Wi-Fi] password {be} on the key card holder"),
        implied_pos=(
            ("the speed test showed {n} Mbps in the room", ((20, 40), (50, 90), (150, 300))),
            ("I did {n} video calls from the room without a single drop", ((2, 2), (3, 4), (6, 9))),
        ),
        implied_neg=(
            ("the speed test showed {n} Mbps on [the wifi]", ((5, 8), (1, 3), (0, 0))),
            ("[the wifi] dropped out {n} times during one video call", ((2, 3), (4, 6), (8, 15))),
            ("I had to use my phone's hotspot for every work call because [the wifi] kept dying", "mh"),
            ("we had to log in to [the wifi] again every {n} minutes", ((60, 60), (20, 30), (5, 10))),
        ),
        distribution=_d(0.10, 0.0, 0.90),
        design="minority",
        weight=2.2,
        minority_sentiment="positive",
        note="the marked minority view: about 90% negative, 10% positive",
    ),
    EntitySpec(
        "pool",
        "pool",
        "amenities",
        "leisure",
        "pool",
        aliases=("the pool", "the swimming pool", "the rooftop pool", "the pool area", "the indoor pool"),
        pos=("gorgeous", "clean", "inviting", "warm", "spacious", "beautiful"),
        neg=("tiny", "crowded", "cold", "murky", "grubby"),
        neutral=(
            "[the pool] {be} open from {r} am to 8 pm",
            "[the pool] {be} on the roof",
            "[the swimming pool] {be} heated in winter",
        ),
        implied_pos=(
            ("we spent {n} hours a day at [the pool]", ((2, 2), (3, 4), (5, 6))),
            ("there were always free loungers by [the pool], even at noon", "mh"),
        ),
        implied_neg=(
            ("[the pool] was closed for maintenance {n} days of our stay", ((2, 2), (3, 4), (5, 6))),
            ("you had to put a towel on a lounger by {n} am to get a spot at [the pool]", ((9, 9), (8, 8), (7, 7))),
        ),
        distribution=_d(0.80, 0.15, 0.05),
        design="skewed",
        weight=0.8,
    ),
)

# ---------------------------------------------------------------------------------------------------------------
# Seller forum
# ---------------------------------------------------------------------------------------------------------------

FORUM_BOARDS = {
    "fees": "Fees & Pricing",
    "policies": "Policies & Account Health",
    "shipping": "Shipping & Fulfilment",
    "payments": "Payments & Payouts",
    "support": "Seller Support",
    "growth": "Growing Your Business",
}

FORUM_ENTITIES: tuple[EntitySpec, ...] = (
    EntitySpec(
        "referral_fee",
        "referral fee",
        "fees",
        "selling fees",
        "referral fees",
        aliases=(
            "the referral fee",
            "referral fees|p",
            "the commission",
            "the selling fee",
            "the commission rate",
            "the referral rate",
        ),
        pos=("fair", "reasonable", "competitive", "worthwhile", "manageable"),
        neg=("steep", "excessive", "brutal", "outrageous", "punishing", "exorbitant"),
        neutral=(
            "[the commission] {be} taken before payout, not invoiced separately",
            "[referral fees|p] vary by category, so check the fee schedule",
            "[the referral fee] {be} {r}% in the category I sell in",
        ),
        implied_pos=(
            ("after [the referral fee] we still keep about {n}% margin on most items", ((15, 20), (22, 30), (35, 45))),
            ("[the commission] is lower than what we pay on the other two marketplaces", "m"),
        ),
        implied_neg=(
            ("[the referral fee] takes {n}% of every sale before shipping", ((12, 14), (15, 18), (20, 25))),
            ("we clear about ${n} on a $25 item after [the commission]", ((5, 6), (3, 4), (1, 1))),
            ("we raised prices {n} times this year just to cover [referral fees|p]", ((2, 2), (3, 3), (4, 5))),
        ),
        data_pos=(("our fee ratio dropped from 15% to {n}% after the category change", ((13, 14), (10, 12), (7, 9))),),
        data_neg=(
            ("[referral fees|p] were {n}% of our revenue last quarter, up from 12%", ((14, 15), (17, 19), (21, 25))),
            ("we ran the numbers: [the commission] cost us ${n},000 last year", ((4, 8), (12, 25), (40, 90))),
        ),
        distribution=_d(0.15, 0.30, 0.55),
        design="skewed",
        weight=1.2,
    ),
    EntitySpec(
        "new_fulfilment_fee",
        "new fulfilment fee",
        "fees",
        "fulfilment fees",
        "the new fulfilment fee",
        aliases=(
            "the new fulfilment fee",
            "the new fulfillment fee",
            "the fulfilment fee change",
            "the new per-unit fee",
            "the new handling surcharge",
            "the updated fulfilment fee",
        ),
        pos=("fair", "reasonable", "justified", "manageable", "sensible"),
        neg=("ridiculous", "excessive", "crippling", "unfair", "absurd", "punishing"),
        neutral=(
            "[the new fulfilment fee] kicks in for orders shipped after the 1st",
            "[the new per-unit fee] {be} charged per unit, not per order",
        ),
        implied_pos=(
            (
                "with [the new fulfilment fee] our cost per order actually went down by {n} cents",
                ((5, 10), (15, 30), (40, 60)),
            ),
            ("[the new per-unit fee] replaced three separate charges, so our invoices are simpler now", "lm"),
        ),
        implied_neg=(
            ("[the new fulfilment fee] adds {n} cents to every order we ship", ((30, 45), (60, 90), (120, 200))),
            (
                "we had to raise prices on {n} listings because of [the new fulfilment fee]",
                ((10, 30), (50, 150), (300, 900)),
            ),
            ("[the new handling surcharge] wipes out the margin on anything under ${n}", ((8, 10), (15, 20), (25, 40))),
        ),
        data_pos=(
            (
                "we compared invoices before and after [the fulfilment fee change]: we pay {n}% less per order",
                ((2, 3), (5, 7), (9, 12)),
            ),
        ),
        data_neg=(
            (
                "our fulfilment costs went up {n}% month over month with [the new fulfilment fee]",
                ((6, 9), (12, 18), (25, 40)),
            ),
        ),
        distribution=_d(0.10, 0.0, 0.90),
        design="minority",
        weight=2.2,
        minority_sentiment="positive",
        note="the marked minority view: about 90% negative, 10% positive",
    ),
    EntitySpec(
        "storage_fees",
        "storage fees",
        "fees",
        "fulfilment fees",
        "storage fees",
        aliases=(
            "storage fees|p",
            "the storage fees|p",
            "long-term storage fees|p",
            "the warehouse storage charges|p",
            "monthly storage fees|p",
            "the storage rate",
        ),
        pos=("reasonable", "fair", "predictable", "affordable", "manageable"),
        neg=("insane", "excessive", "unpredictable", "steep", "punishing"),
        neutral=("[storage fees|p] go up in Q4 every year", "[the storage rate] {be} calculated per cubic foot"),
        implied_pos=(
            ("[the storage fees|p] are less than half what our old 3PL charged", "mh"),
            (
                "we keep {n} weeks of stock in the warehouse and [storage fees|p] barely register",
                ((10, 12), (6, 8), (3, 4)),
            ),
        ),
        implied_neg=(
            (
                "[long-term storage fees|p] ate ${n} last month on stock that's barely moving",
                ((80, 150), (300, 700), (1200, 3000)),
            ),
            ("we had to destroy {n} units to avoid [the storage fees|p]", ((20, 50), (100, 300), (500, 1500))),
        ),
        data_neg=(("[storage fees|p] were {n}% of our fulfilment spend in Q4", ((15, 20), (25, 35), (40, 55))),),
        distribution=_d(0.25, 0.35, 0.40),
        design="three_way",
    ),
    EntitySpec(
        "returns_policy",
        "returns policy",
        "policies",
        "buyer protection",
        "returns policy",
        aliases=(
            "the returns policy",
            "the return policy",
            "the new return rules|p",
            "the returnless refund policy",
            "the buyer returns process",
        ),
        pos=("fair", "sensible", "balanced", "clear", "reasonable"),
        neg=("one-sided", "ridiculous", "unfair", "exploitable", "biased"),
        neutral=(
            "[the returns policy] {be} 30 days for most categories",
            "[the return policy] differs between marketplaces, check the help page",
        ),
        implied_pos=(
            ("[returns|p] are down to {n}% of orders since they clarified the rules", ((4, 5), (2, 3), (1, 1))),
            ("buyers seem happier to order knowing [the returns policy] has their back", "m"),
        ),
        implied_neg=(
            ("we got {n} returns last month with the item clearly used", ((3, 5), (8, 15), (20, 40))),
            (
                "a buyer returned a jacket after wearing it for {n} weeks and [the returns policy] sided with them",
                ((2, 2), (3, 4), (6, 8)),
            ),
            ("under [the returnless refund policy] we lose the item and the money", "mh"),
        ),
        data_neg=(
            ("our return rate went from 4% to {n}% since [the new return rules|p]", ((6, 7), (9, 12), (15, 22))),
        ),
        distribution=_d(0.45, 0.15, 0.40),
        design="split",
        weight=1.2,
    ),
    EntitySpec(
        "account_suspension",
        "account suspension",
        "policies",
        "account health",
        "account suspension",
        aliases=(
            "account suspensions|p",
            "the suspension process",
            "getting suspended",
            "the suspension",
            "the appeals process",
            "the account health team",
        ),
        pos=("fair", "quick", "transparent", "reasonable", "consistent"),
        neg=("arbitrary", "terrifying", "opaque", "kafkaesque", "brutal", "unfair"),
        neutral=(
            "[the appeals process] asks for a plan of action first",
            "[account suspensions|p] are reviewed by a separate team",
        ),
        implied_pos=(
            ("[the appeals process] took {n} days and we were reinstated", ((8, 10), (4, 6), (1, 2))),
            (
                "[the account health team] told us exactly what to fix and we were back in {n} hours",
                ((40, 48), (12, 24), (2, 6)),
            ),
        ),
        implied_neg=(
            ("we were suspended for {n} days over a single late shipment", ((3, 5), (10, 20), (30, 60))),
            (
                "[the appeals process] rejected our plan of action {n} times with the same copy-paste reply",
                ((2, 2), (3, 4), (5, 8)),
            ),
            ("our listings went dark overnight with no warning and no reason given", "mh"),
        ),
        distribution=_d(0.03, 0.05, 0.92),
        design="near_unanimous",
    ),
    EntitySpec(
        "category_approval",
        "category approval",
        "policies",
        "listing rules",
        "category approval",
        aliases=(
            "category approval",
            "the category approval process",
            "ungating",
            "gated categories|p",
            "the approval process for restricted categories",
        ),
        pos=("straightforward", "quick", "painless", "clear", "reasonable"),
        neg=("opaque", "slow", "inconsistent", "arbitrary", "bureaucratic"),
        neutral=(
            "[category approval] needs invoices from an authorised distributor",
            "[ungating] {be} handled per brand, not per category",
        ),
        implied_pos=(
            ("got approved for toys in {n} days with two invoices", ((12, 14), (5, 9), (1, 2))),
            ("[ungating] went through on the first try", "m"),
        ),
        implied_neg=(
            ("we sent the same invoices {n} times before [category approval] went through", ((2, 2), (3, 4), (5, 8))),
            ("[the category approval process] has been pending for {n} weeks", ((2, 3), (5, 8), (10, 16))),
        ),
        distribution=_d(0.30, 0.35, 0.35),
        design="three_way",
        weight=0.8,
    ),
    EntitySpec(
        "carrier_delays",
        "carrier delays",
        "shipping",
        "carriers",
        "carrier delays",
        aliases=(
            "carrier delays|p",
            "the carrier delays|p",
            "delivery delays|p",
            "late deliveries|p",
            "shipping delays|p",
        ),
        pos=("minimal", "rare", "manageable", "negligible", "occasional"),
        neg=("brutal", "constant", "terrible", "chronic", "unacceptable", "endless"),
        neutral=(
            "[carrier delays|p] usually pick up around the holidays",
            "[late deliveries|p] only count against you if tracking shows the seller was at fault",
        ),
        implied_pos=(
            ("[transit times|p] are back to {n} days on average", ((4, 4), (3, 3), (2, 2))),
            ("only {n} of our last 500 parcels arrived late", ((9, 12), (4, 7), (1, 2))),
        ),
        implied_neg=(
            ("parcels are sitting at the depot for {n} days before anyone scans them", ((2, 3), (4, 6), (7, 12))),
            ("we've had {n} late-delivery complaints this week alone", ((3, 5), (8, 15), (20, 40))),
            ("tracking has said 'in transit' for {n} days on half our orders", ((4, 5), (7, 10), (14, 21))),
        ),
        data_neg=(("{n}% of our orders arrived late last month, up from 3%", ((5, 7), (9, 14), (18, 30))),),
        distribution=_d(0.05, 0.20, 0.75),
        design="skewed",
        weight=1.1,
    ),
    EntitySpec(
        "shipping_labels",
        "shipping labels",
        "shipping",
        "tools",
        "shipping labels",
        aliases=(
            "the shipping labels|p",
            "the label tool",
            "label printing",
            "buying postage",
            "the postage tool",
            "the label printer integration",
        ),
        pos=("easy", "handy", "reliable", "cheap", "convenient", "quick"),
        neg=("clunky", "buggy", "glitchy", "overpriced", "slow"),
        neutral=(
            "[the label tool] {be} under Orders, then Ship",
            "[the shipping labels|p] print in 4x6 format by default",
        ),
        implied_pos=(
            ("we print {n} labels a day in about two clicks", ((10, 20), (40, 80), (150, 300))),
            (
                "[buying postage] through the platform saves us {n}% versus the post office counter",
                ((3, 5), (8, 12), (15, 25)),
            ),
        ),
        implied_neg=(
            ("[the label tool] crashed {n} times while I was printing one batch", ((2, 2), (3, 5), (6, 10))),
            ("half [the shipping labels|p] printed with the barcode cut off", "mh"),
        ),
        distribution=_d(0.60, 0.25, 0.15),
        design="skewed",
        weight=0.8,
    ),
    EntitySpec(
        "payout_schedule",
        "payout schedule",
        "payments",
        "payouts",
        "payouts",
        aliases=(
            "the payout schedule",
            "payouts|p",
            "the payout cycle",
            "disbursements|p",
            "the payout timing",
            "getting paid",
        ),
        pos=("reliable", "predictable", "fast", "regular", "quick"),
        neg=("slow", "unpredictable", "erratic", "painful", "delayed"),
        neutral=("[payouts|p] go out on a fixed weekday", "[the payout schedule] {be} listed under account settings"),
        implied_pos=(
            ("[payouts|p] land in our bank every {n} days like clockwork", ((10, 14), (5, 7), (2, 3))),
            ("we get paid {n} days after delivery", ((10, 14), (5, 7), (1, 2))),
        ),
        implied_neg=(
            ("[the payout] took {n} weeks again", ((2, 2), (3, 3), (4, 6))),
            ("we're waiting {n} days for money from orders delivered ages ago", ((10, 14), (18, 25), (30, 45))),
            (
                "[the payout schedule] now holds funds {n} days after delivery, so we dipped into savings to "
                "pay suppliers",
                ((7, 7), (10, 14), (21, 30)),
            ),
        ),
        data_neg=(("our average time to payout went from 3 days to {n}", ((7, 9), (12, 15), (20, 30))),),
        data_pos=(("we average {n} days from delivery to cash in the bank", ((6, 7), (4, 5), (2, 3))),),
        distribution=_d(0.68, 0.17, 0.15),
        design="shift",
        weight=2.0,
        shift_date="2024-04-15",
        shift_after=_d(0.15, 0.20, 0.65),
        note="a payout policy change on 2024-04-15 (funds held until after delivery): liked before, disliked after",
    ),
    EntitySpec(
        "payment_holds",
        "payment holds",
        "payments",
        "payouts",
        "payment holds",
        aliases=(
            "payment holds|p",
            "the reserve",
            "the rolling reserve",
            "the funds hold",
            "held funds|p",
            "the account reserve",
        ),
        pos=("fair", "reasonable", "understandable", "short", "temporary"),
        neg=("outrageous", "endless", "crippling", "unexplained", "arbitrary"),
        neutral=(
            "[the rolling reserve] {be} {r}% for new accounts",
            "[payment holds|p] apply to high-value orders in some categories",
        ),
        implied_pos=(("[the reserve] was released after {n} days as promised", ((14, 14), (7, 10), (2, 4))),),
        implied_neg=(
            ("they're holding ${n},000 of our money with no explanation", ((1, 2), (5, 12), (20, 60))),
            ("[the rolling reserve] has kept {n}% of our sales for three months", ((5, 7), (10, 15), (20, 30))),
        ),
        distribution=_d(0.04, 0.26, 0.70),
        design="skewed",
    ),
    EntitySpec(
        "seller_support",
        "seller support tickets",
        "support",
        "seller support",
        "seller support",
        aliases=(
            "seller support",
            "the support team",
            "the support agents|p",
            "the seller support team",
            "the help desk",
        ),
        pos=("helpful", "responsive", "quick", "knowledgeable", "patient"),
        neg=("useless", "clueless", "slow", "robotic", "unhelpful"),
        neutral=(
            "[seller support] {be} reachable through the help menu",
            "[support tickets|p] get a case number by email",
        ),
        implied_pos=(
            ("[seller support] solved my listing issue in {n} minutes", ((40, 60), (15, 30), (3, 10))),
            ("the agent from [the support team] called me back the same day and checked in again later", "mh"),
        ),
        implied_neg=(
            ("I've opened {n} tickets about the same problem and got {n} different answers", ((2, 2), (3, 4), (5, 7))),
            ("[seller support] closed my case without reading it", "mh"),
            ("{n} days and still no reply from [the support team]", ((3, 4), (6, 9), (12, 20))),
        ),
        distribution=_d(0.40, 0.15, 0.45),
        design="split",
        weight=1.2,
    ),
    EntitySpec(
        "live_chat",
        "live chat",
        "support",
        "seller support",
        "live chat",
        aliases=("live chat", "the live chat", "chat support", "the chat agents|p", "the callback service"),
        pos=("quick", "helpful", "friendly", "efficient", "convenient"),
        neg=("scripted", "slow", "useless", "unhelpful", "chaotic"),
        neutral=(
            "[live chat] {be} available in English and Spanish",
            "[the callback service] {be} only offered for account health issues",
        ),
        implied_pos=(
            ("got through to [live chat] in {n} minutes", ((10, 15), (4, 8), (1, 2))),
            ("the agent on [chat support] escalated my case and it was fixed by morning", "mh"),
        ),
        implied_neg=(
            ("I was transferred {n} times on [live chat] and ended up where I started", ((2, 2), (3, 4), (5, 7))),
            ("the queue for [chat support] was {n} people long", ((20, 40), (60, 120), (200, 400))),
        ),
        distribution=_d(0.55, 0.25, 0.20),
        design="skewed",
        weight=0.8,
    ),
    EntitySpec(
        "search_ranking",
        "search ranking",
        "growth",
        "search",
        "search ranking",
        aliases=(
            "search ranking",
            "the search algorithm",
            "organic ranking",
            "our search placement",
            "the search results|p",
            "ranking in search",
        ),
        pos=("fair", "stable", "predictable", "transparent", "strong"),
        neg=("random", "unpredictable", "opaque", "broken", "rigged"),
        neutral=(
            "[the search algorithm] weighs conversion rate and price, as far as I know",
            "[search ranking] updates daily according to the help pages",
        ),
        implied_pos=(
            ("our main listing moved up to position {n} for its keyword", ((8, 10), (3, 5), (1, 1))),
            ("organic traffic is up {n}% since we fixed our titles", ((5, 8), (12, 20), (30, 60))),
        ),
        implied_neg=(
            ("our best seller dropped from page 1 to page {n} overnight", ((2, 2), (3, 5), (8, 15))),
            ("sessions from search are down {n}% with no change on our side", ((8, 12), (20, 35), (45, 70))),
        ),
        data_neg=(("search impressions fell {n}% week over week in our analytics", ((5, 9), (15, 25), (35, 60))),),
        distribution=_d(0.20, 0.45, 0.35),
        design="skewed",
    ),
    EntitySpec(
        "sponsored_ads",
        "sponsored ads",
        "growth",
        "advertising",
        "sponsored ads",
        aliases=("sponsored ads|p", "the ads|p", "advertising", "PPC", "the ad platform", "sponsored listings|p"),
        pos=("worthwhile", "effective", "profitable", "useful", "cost-effective"),
        neg=("expensive", "wasteful", "useless", "predatory", "overpriced"),
        neutral=("[sponsored ads|p] are billed per click", "we run [PPC] only on our top {r} products"),
        implied_pos=(
            ("our ACoS on [sponsored ads|p] is down to {n}%", ((25, 30), (15, 20), (6, 10))),
            ("[PPC] brought in {n} orders last week for $40 of spend", ((5, 8), (12, 20), (30, 50))),
        ),
        implied_neg=(
            ("we spent ${n} on [the ads|p] last month for {r} sales", ((100, 200), (400, 800), (1500, 3000))),
            ("cost per click on [sponsored listings|p] went up {n}% since spring", ((10, 15), (25, 40), (60, 100))),
        ),
        data_pos=(("our return on ad spend is {n}x on [sponsored ads|p] this quarter", ((2, 2), (3, 4), (6, 9))),),
        distribution=_d(0.35, 0.30, 0.35),
        design="three_way",
    ),
    EntitySpec(
        "buyer_reviews",
        "buyer reviews",
        "growth",
        "customer feedback",
        "buyer reviews",
        aliases=(
            "buyer reviews|p",
            "product reviews|p",
            "the review system",
            "customer feedback",
            "the feedback system",
            "star ratings|p",
        ),
        pos=("fair", "helpful", "honest", "useful", "valuable"),
        neg=("unfair", "abused", "manipulated", "broken", "one-sided"),
        neutral=(
            "[product reviews|p] show up after about 48 hours",
            "[the review system] lets buyers edit a review once",
        ),
        implied_pos=(
            ("[buyer reviews|p] pushed our conversion rate up {n}%", ((2, 4), (6, 10), (15, 25))),
            ("we're at {n} five-star reviews this month without asking anyone", ((10, 20), (30, 60), (100, 200))),
        ),
        implied_neg=(
            ("a competitor left {n} one-star reviews on our listing in one night", ((2, 3), (4, 7), (10, 20))),
            ("[the review system] removed {n} genuine reviews from real customers", ((2, 3), (5, 10), (15, 40))),
        ),
        distribution=_d(0.50, 0.30, 0.20),
        design="skewed",
        weight=0.9,
    ),
)

# ---------------------------------------------------------------------------------------------------------------
# Generic frames: (sentiment, intensity, kind, domain, text). intensity "l"/"m"/"h", "n" for neutral.
# kind: direct, negation, comparison, hedge, sarcasm, style (domain flavoured).
# ---------------------------------------------------------------------------------------------------------------

Frame = tuple[str, str, str, str, str]

FRAMES: tuple[Frame, ...] = (
    # positive, high
    ("positive", "h", "direct", "*", "{a} {be} absolutely {P}"),
    ("positive", "h", "direct", "*", "{a} {be} genuinely {P} from start to finish"),
    ("positive", "h", "direct", "*", "{a} {be} {P} and {P2}, honestly faultless"),
    ("positive", "h", "direct", "*", "{a} {be} exceptional"),
    ("positive", "h", "direct", "*", "top marks for {a}"),
    ("positive", "h", "direct", "*", "{a}? Couldn't ask for better"),
    ("positive", "h", "direct", "*", "{a} {be} the best I've come across in years"),
    ("positive", "h", "direct", "*", "{a} {be} incredibly {P}"),
    ("positive", "h", "direct", "*", "nothing but praise for {a}"),
    ("positive", "h", "direct", "*", "{a} {be} outstanding, {P} every single time"),
    ("positive", "h", "direct", "*", "{a}: ten out of ten"),
    ("positive", "h", "direct", "*", "{a} {be} {P}, {P2} and then some"),
    ("positive", "h", "negation", "*", "I can't praise {a} enough"),
    ("positive", "h", "negation", "*", "{a} could not have been more {P}"),
    ("positive", "h", "comparison", "*", "{a} {be} miles ahead of {other}"),
    ("positive", "h", "style", "hotels", "{a} {be} the highlight of our stay"),
    ("positive", "h", "style", "hotels", "{a} alone would bring us back"),
    ("positive", "h", "style", "hotels", "{we} still talk about {a}"),
    ("positive", "h", "style", "seller_forum", "credit where it's due: {a} {be} superb"),
    ("positive", "h", "style", "seller_forum", "honestly {a} {be} the one thing this platform gets completely right"),
    # positive, medium
    ("positive", "m", "direct", "*", "{a} {be} {P}"),
    ("positive", "m", "direct", "*", "{a} {be} really {P}"),
    ("positive", "m", "direct", "*", "{a} {be} pretty {P}"),
    ("positive", "m", "direct", "*", "{a} {be} {P}, as promised"),
    ("positive", "m", "direct", "*", "{we} found {a} {P}"),
    ("positive", "m", "direct", "*", "{a} {be} {P} and {P2}"),
    ("positive", "m", "direct", "*", "{a} {be} good"),
    ("positive", "m", "direct", "*", "happy with {a}"),
    ("positive", "m", "direct", "*", "{a} {be} {P}, no fuss"),
    ("positive", "m", "direct", "*", "{a} {be} a plus"),
    ("positive", "m", "negation", "*", "no complaints about {a}"),
    ("positive", "m", "negation", "*", "{a} {bent} {N} at all"),
    ("positive", "m", "negation", "*", "{a} {bent} a problem in the slightest"),
    ("positive", "m", "negation", "*", "nothing to fault with {a}"),
    ("positive", "m", "comparison", "*", "{a} {be} better than {other}"),
    ("positive", "m", "comparison", "*", "{a} {have} improved a lot since {year}"),
    ("positive", "m", "comparison", "*", "{a} {be} better than before"),
    ("positive", "m", "style", "hotels", "{we} really liked {a}"),
    ("positive", "m", "style", "hotels", "{a} made things easy"),
    ("positive", "m", "style", "seller_forum", "for what it's worth, {a} {be} {P} for us"),
    ("positive", "m", "style", "seller_forum", "unpopular opinion maybe, but {a} {be} {P}"),
    ("positive", "m", "style", "seller_forum", "I'll say it: {a} {be} {P}"),
    # positive, low
    ("positive", "l", "direct", "*", "{a} {be} fairly {P}"),
    ("positive", "l", "direct", "*", "{a} {be} reasonably {P}"),
    ("positive", "l", "direct", "*", "{a} {be} {P} enough"),
    ("positive", "l", "direct", "*", "{a} {be} mostly {P}"),
    ("positive", "l", "direct", "*", "{a} {be} decent"),
    ("positive", "l", "direct", "*", "{a} did the job"),
    ("positive", "l", "hedge", "*", "{a} {be} ok-ish, I guess"),
    ("positive", "l", "hedge", "*", "{a} {be} alright, I suppose"),
    ("positive", "l", "hedge", "*", "I guess {a} {be} {P}, mostly"),
    ("positive", "l", "hedge", "*", "{a} {be} fine, I think"),
    ("positive", "l", "hedge", "*", "{a} {be} sort of {P}, I'd say"),
    ("positive", "l", "negation", "*", "{a} {be} not {N}"),
    ("positive", "l", "negation", "*", "{a} {bent} {N}, to be fair"),
    ("positive", "l", "negation", "*", "can't really complain about {a}"),
    ("positive", "l", "negation", "*", "{a} {bent} bad"),
    ("positive", "l", "comparison", "*", "{a} {be} slightly better than I expected"),
    ("positive", "l", "comparison", "*", "{a} {be} a touch better than {other}"),
    # neutral
    ("neutral", "n", "direct", "*", "{a} {be} about what you'd expect"),
    ("neutral", "n", "direct", "*", "{a} {be} neither great nor terrible"),
    ("neutral", "n", "direct", "*", "{a} {be} average"),
    ("neutral", "n", "direct", "*", "{a} {be} standard for this kind of place"),
    ("neutral", "n", "direct", "*", "not much to say about {a}"),
    ("neutral", "n", "direct", "*", "{a} {be} fine, nothing more, nothing less"),
    ("neutral", "n", "direct", "*", "no strong feelings about {a}"),
    ("neutral", "n", "direct", "*", "{a} {be} a mixed bag"),
    ("neutral", "n", "direct", "*", "{a} {be} pretty much as described"),
    ("neutral", "n", "direct", "*", "{a} {be} ok, neither here nor there"),
    ("neutral", "n", "direct", "*", "I don't have much of an opinion on {a}"),
    ("neutral", "n", "style", "hotels", "{we} didn't really make use of {a}"),
    ("neutral", "n", "style", "hotels", "can't comment much on {a}, we were out all day"),
    ("neutral", "n", "style", "seller_forum", "what's everyone's experience with {a}?"),
    ("neutral", "n", "style", "seller_forum", "can someone explain {a} to me?"),
    ("neutral", "n", "style", "seller_forum", "quick question about {a}"),
    ("neutral", "n", "style", "seller_forum", "has anything changed with {a} recently?"),
    ("neutral", "n", "style", "seller_forum", "is there an official page about {a}?"),
    ("neutral", "n", "style", "seller_forum", "trying to get my head around {a} before Q4"),
    ("neutral", "n", "style", "seller_forum", "{be} {a} different in other regions?"),
    # negative, low
    ("negative", "l", "direct", "*", "{a} {be} a bit {N}"),
    ("negative", "l", "direct", "*", "{a} {be} slightly {N}"),
    ("negative", "l", "direct", "*", "{a} {be} somewhat {N}"),
    ("negative", "l", "direct", "*", "if I'm being picky, {a} {be} {N}"),
    ("negative", "l", "direct", "*", "{a} {be} ok but a little {N}"),
    ("negative", "l", "negation", "*", "{a} {bent} great"),
    ("negative", "l", "negation", "*", "{a} {be} not as {P} as I'd hoped"),
    ("negative", "l", "negation", "*", "{a} {bent} exactly {P}"),
    ("negative", "l", "negation", "*", "{a} {bent} the best"),
    ("negative", "l", "hedge", "*", "I guess {a} {be} on the {N} side"),
    ("negative", "l", "hedge", "*", "{a} {be} maybe a touch {N}"),
    ("negative", "l", "hedge", "*", "{a} {could} better"),
    ("negative", "l", "comparison", "*", "{a} {be} slightly worse than {other}"),
    ("negative", "l", "comparison", "*", "{a} {be} a step down from last time"),
    ("negative", "l", "style", "hotels", "{a} {be} the weak spot, if there was one"),
    ("negative", "l", "style", "seller_forum", "minor gripe, but {a} {be} {N}"),
    # negative, medium
    ("negative", "m", "direct", "*", "{a} {be} {N}"),
    ("negative", "m", "direct", "*", "{a} {be} pretty {N}"),
    ("negative", "m", "direct", "*", "{a} {be} really {N}"),
    ("negative", "m", "direct", "*", "{a} {be} {N}, to be honest"),
    ("negative", "m", "direct", "*", "not a fan of {a}"),
    ("negative", "m", "direct", "*", "{a} {be} the weak point"),
    ("negative", "m", "direct", "*", "{a} {be} {N} and {N2}"),
    ("negative", "m", "direct", "*", "{a} {be} in need of some serious work"),
    ("negative", "m", "negation", "*", "{a} {be} not {P} at all"),
    ("negative", "m", "negation", "*", "{a} {bent} {P}, not even close"),
    ("negative", "m", "negation", "*", "nothing {P} about {a}"),
    ("negative", "m", "comparison", "*", "{a} used to be much better"),
    ("negative", "m", "comparison", "*", "{a} {have} gone downhill since {year}"),
    ("negative", "m", "comparison", "*", "{a} {be} nowhere near as {P} as a few years ago"),
    ("negative", "m", "comparison", "*", "{a} {be} worse than {other}"),
    ("negative", "m", "comparison", "*", "compared to {year}, {a} {be} {N}"),
    ("negative", "m", "sarcasm", "*", "great job on {a}, really"),
    ("negative", "m", "sarcasm", "*", "{a}? Sure, 'world class', if you squint"),
    ("negative", "m", "sarcasm", "*", "loved {a}. Said nobody, ever"),
    ("negative", "m", "sarcasm", "*", "oh yes, {a} {be} just wonderful"),
    ("negative", "m", "style", "hotels", "{a} let the place down"),
    ("negative", "m", "style", "hotels", "{we} did not enjoy {a}"),
    ("negative", "m", "style", "seller_forum", "anyone else finding {a} {N} lately?"),
    ("negative", "m", "style", "seller_forum", "is it just me or {be} {a} {N} again?"),
    ("negative", "m", "style", "seller_forum", "+1, {a} {be} {N} for us too"),
    ("negative", "m", "style", "seller_forum", "same here, {a} {be} {N}"),
    # negative, high
    ("negative", "h", "direct", "*", "{a} {be} absolutely {N}"),
    ("negative", "h", "direct", "*", "{a} {be} ridiculously {N}"),
    ("negative", "h", "direct", "*", "{a} {be} unbelievably {N}"),
    ("negative", "h", "direct", "*", "{a} {be} a complete joke"),
    ("negative", "h", "direct", "*", "{a} {be} the worst I have ever experienced"),
    ("negative", "h", "direct", "*", "{a} {be} a total disaster"),
    ("negative", "h", "direct", "*", "{a} {be} beyond {N}"),
    ("negative", "h", "direct", "*", "{a} {be} {N} to the point of being a joke"),
    ("negative", "h", "negation", "*", "{a} {bent} even remotely {P}"),
    ("negative", "h", "negation", "*", "there is nothing {P} about {a}, nothing"),
    ("negative", "h", "comparison", "*", "{a} {have} fallen off a cliff since {year}"),
    ("negative", "h", "sarcasm", "*", "ten out of ten for {a}, if we're counting complaints"),
    ("negative", "h", "sarcasm", "*", "bravo on {a}. Truly a masterclass in how not to do it"),
    ("negative", "h", "style", "hotels", "avoid if {a} matters to you at all"),
    ("negative", "h", "style", "hotels", "{a} ruined what could have been a good stay"),
    ("negative", "h", "style", "seller_forum", "if you rely on {a}, good luck"),
    ("negative", "h", "style", "seller_forum", "{a} {be} killing small sellers"),
    ("negative", "h", "style", "seller_forum", "seriously, who signed off on {a}?"),
)

FRAME_KIND_WEIGHT = {"direct": 1.0, "negation": 1.0, "comparison": 0.8, "hedge": 1.0, "sarcasm": 0.3, "style": 1.0}

# ---------------------------------------------------------------------------------------------------------------
# Emotions, impact, evidence. Entries: (sentiment filter, domain filter, text); "*" matches anything.
# ---------------------------------------------------------------------------------------------------------------

EmotionPhrase = tuple[str, str, str]

EMOTION_PHRASES: dict[str, tuple[EmotionPhrase, ...]] = {
    "frustration": (
        ("*", "*", "Beyond annoying."),
        ("*", "*", "I'm sick of chasing it."),
        ("*", "hotels", "Not what you want after a long journey."),
        ("*", "seller_forum", "Wasted my whole afternoon."),
        ("*", "*", "So frustrating."),
        ("*", "*", "It was maddening."),
        ("*", "*", "Honestly, I'm fed up."),
        ("*", "*", "Such a hassle."),
        ("*", "*", "It drives me up the wall."),
        ("*", "*", "I was tearing my hair out."),
        ("*", "*", "Exasperating, really."),
        ("*", "seller_forum", "I've lost count of the hours wasted on this."),
    ),
    "disappointment": (
        ("*", "*", "Not what I was hoping for."),
        ("*", "*", "Such a pity."),
        ("*", "hotels", "We'd read such good things, too."),
        ("*", "seller_forum", "This platform used to be better than this."),
        ("*", "*", "I was disappointed."),
        ("*", "*", "What a letdown."),
        ("*", "*", "We expected more."),
        ("*", "*", "I'd hoped for better."),
        ("*", "*", "A real shame."),
        ("*", "hotels", "Pretty disappointing for the price."),
        ("*", "seller_forum", "Disappointing, after years of selling here."),
    ),
    "anxiety": (
        ("*", "*", "I'm dreading what comes next."),
        ("*", "*", "It worries me more than I'd like."),
        ("*", "hotels", "Not relaxing when you're travelling with others."),
        ("*", "*", "It makes me nervous."),
        ("*", "*", "I'm honestly worried about it."),
        ("*", "*", "It has me on edge."),
        ("*", "hotels", "It made us uneasy."),
        ("*", "seller_forum", "I'm losing sleep over this."),
        ("*", "seller_forum", "I'm worried about cash flow."),
        ("*", "seller_forum", "Not knowing what comes next is stressful."),
    ),
    "resignation": (
        ("*", "*", "Nothing to be done."),
        ("*", "*", "That's how it goes, I guess."),
        ("negative", "*", "I don't expect it to change."),
        ("*", "*", "It is what it is."),
        ("*", "*", "Oh well."),
        ("*", "*", "I suppose that's just how it is now."),
        ("negative", "*", "I've given up complaining."),
        ("negative", "*", "I've stopped expecting anything different."),
        ("*", "seller_forum", "Nothing we can do about it, I guess."),
        ("*", "hotels", "Whatever, not much you can do."),
    ),
    "hope": (
        ("negative", "*", "Maybe next time will be different."),
        ("positive", "*", "Long may it last."),
        ("neutral", "*", "We'll see how it goes."),
        ("negative", "*", "Hopefully they sort it out."),
        ("negative", "*", "Fingers crossed it improves."),
        ("negative", "seller_forum", "Here's hoping they reverse it."),
        ("negative", "hotels", "Hopefully management reads this."),
        ("positive", "*", "I hope they keep it that way."),
        ("positive", "*", "Fingers crossed it stays like this."),
        ("neutral", "*", "Hoping for the best."),
        ("neutral", "seller_forum", "Hoping it turns out well for us."),
        ("neutral", "hotels", "Hopefully it's better next time."),
    ),
    "relief": (
        ("*", "*", "Phew."),
        ("*", "*", "Glad that one worked out."),
        ("*", "*", "Honestly a relief after last time."),
        ("*", "*", "What a relief."),
        ("*", "*", "I was relieved, to be honest."),
        ("*", "*", "Such a weight off my shoulders."),
        ("*", "hotels", "Relieved, after the last time."),
        ("*", "seller_forum", "Relieved, given the horror stories here."),
    ),
    "delight": (
        ("*", "*", "Loved it."),
        ("*", "*", "Couldn't have been happier."),
        ("*", "hotels", "We were over the moon."),
        ("*", "seller_forum", "Genuinely happy about this."),
        ("*", "*", "We were thrilled."),
        ("*", "*", "Absolutely delighted."),
        ("*", "*", "It made our day."),
        ("*", "hotels", "A lovely surprise."),
        ("*", "*", "It put a big smile on my face."),
        ("*", "seller_forum", "Made my week, honestly."),
    ),
    "trust": (
        ("*", "*", "Always dependable."),
        ("*", "*", "I've never had to worry about it."),
        ("*", "seller_forum", "Solid and dependable, year after year."),
        ("*", "*", "They've never let me down."),
        ("*", "*", "I trust them on this."),
        ("*", "*", "Reliable as always."),
        ("*", "*", "I know I can count on them."),
        ("*", "hotels", "It's why we keep coming back."),
        ("*", "seller_forum", "One thing I never have to double-check."),
    ),
    "anger": (
        ("*", "*", "I'm fuming."),
        ("*", "*", "Disgraceful."),
        ("*", "*", "I lost my temper, I'll admit."),
        ("*", "*", "I was furious."),
        ("*", "*", "Absolutely livid."),
        ("*", "*", "Outrageous."),
        ("*", "*", "I'm angry, frankly."),
        ("*", "*", "It made my blood boil."),
        ("*", "*", "Unacceptable, and I told them so."),
    ),
}

#: (impact, polarity group, domain) entries. Polarity group: positive / negative / neutral.
IMPACT_PHRASES: tuple[tuple[str, str, str, str], ...] = (
    ("high", "negative", "hotels", "It ruined the first night of our trip."),
    ("high", "negative", "hotels", "A dealbreaker for us."),
    ("high", "negative", "hotels", "It coloured the whole stay."),
    ("high", "negative", "hotels", "It's the main reason we won't be back."),
    ("high", "negative", "hotels", "We ended up cutting the trip short by a night."),
    ("high", "negative", "hotels", "It overshadowed everything else about the place."),
    ("high", "negative", "hotels", "For a work trip that's a serious problem."),
    ("high", "negative", "seller_forum", "This is eating into our margins badly."),
    ("high", "negative", "seller_forum", "We may have to close the shop over this."),
    ("high", "negative", "seller_forum", "It's the difference between profit and loss for us."),
    ("high", "negative", "seller_forum", "We've paused {r} product lines because of it."),
    ("high", "negative", "seller_forum", "Cash flow is a mess because of this."),
    ("high", "negative", "seller_forum", "We're seriously looking at other platforms now."),
    ("medium", "negative", "hotels", "It cost us a good hour of our evening."),
    ("medium", "negative", "hotels", "It did put a damper on things."),
    ("medium", "negative", "hotels", "We had to rearrange our plans around it."),
    ("medium", "negative", "hotels", "It took the shine off the first day."),
    ("medium", "negative", "hotels", "Annoying when you're paying this much."),
    ("medium", "negative", "seller_forum", "It's a noticeable hit on our numbers."),
    ("medium", "negative", "seller_forum", "It adds a few hours of admin every week."),
    ("medium", "negative", "seller_forum", "We've had to adjust prices on a handful of items."),
    ("medium", "negative", "seller_forum", "It eats a chunk of every Monday morning."),
    ("low", "negative", "*", "Minor thing, though."),
    ("low", "negative", "*", "Not a big deal in the end."),
    ("low", "negative", "*", "Only a small niggle."),
    ("low", "negative", "hotels", "Didn't really spoil anything."),
    ("low", "negative", "hotels", "We barely noticed after the first day."),
    ("low", "negative", "hotels", "Wouldn't stop us coming back."),
    ("low", "negative", "seller_forum", "Not a big deal for a shop our size."),
    ("low", "negative", "seller_forum", "We can live with it."),
    ("low", "negative", "seller_forum", "Barely shows up in our numbers."),
    ("high", "positive", "hotels", "It made the whole trip."),
    ("high", "positive", "hotels", "Honestly the reason we'd come back."),
    ("high", "positive", "hotels", "It's what we'll remember about this stay."),
    ("high", "positive", "hotels", "It turned a good stay into a great one."),
    ("high", "positive", "seller_forum", "It has made a big difference to our bottom line."),
    ("high", "positive", "seller_forum", "It's a big part of why we stay on this platform."),
    ("high", "positive", "seller_forum", "It's one of the reasons we grew {r}0% last year."),
    ("medium", "positive", "hotels", "It made things noticeably easier."),
    ("medium", "positive", "hotels", "It took the stress out of arriving."),
    ("medium", "positive", "hotels", "A real plus after long days out."),
    ("medium", "positive", "hotels", "It made the mornings easy."),
    ("medium", "positive", "seller_forum", "It saves us a fair bit of time each week."),
    ("medium", "positive", "seller_forum", "One less thing to worry about."),
    ("medium", "positive", "seller_forum", "Helps our margins a little."),
    ("low", "positive", "*", "Small thing, but nice."),
    ("low", "positive", "*", "Nice touch, nothing more."),
    ("low", "positive", "hotels", "Not something we'd choose a hotel for, mind."),
    ("low", "positive", "hotels", "Didn't make or break the stay."),
    ("low", "positive", "seller_forum", "Doesn't move the needle much, but still."),
    ("low", "positive", "seller_forum", "Small win, but I'll take it."),
    ("high", "neutral", "seller_forum", "This matters a lot for sellers like us, so I'm watching it closely."),
    ("high", "neutral", "seller_forum", "Half our revenue depends on it, so I need to understand it."),
    ("high", "neutral", "hotels", "It's the first thing we look at when booking."),
    ("high", "neutral", "hotels", "It matters a lot to us, so worth mentioning."),
    ("medium", "neutral", "hotels", "It's worth knowing before you book."),
    ("medium", "neutral", "hotels", "Something to factor in."),
    ("medium", "neutral", "seller_forum", "Worth knowing if you're planning Q4."),
    ("medium", "neutral", "seller_forum", "Something to factor into pricing."),
    ("low", "neutral", "*", "Doesn't affect us much either way."),
    ("low", "neutral", "*", "Not that it matters much."),
    ("low", "neutral", "hotels", "We didn't give it much thought."),
    ("low", "neutral", "seller_forum", "Doesn't really touch our business."),
)

#: Optional lead-ins for emotion sentences (the sentence's first letter is lowered after them).
EMOTION_LEADS = ("Honestly, ", "Frankly, ", "Not going to lie, ", "To be fair, ", "I'll admit ", "")

ANECDOTAL_PREFIXES = {
    "hotels": (
        "a friend who stayed here in {month} said ",
        "apparently ",
        "I've heard from other guests that ",
        "according to a couple of other reviews, ",
        "my colleague, who stays here a lot, says ",
        "the couple next to us at breakfast said ",
        "other guests told us ",
        "word is that ",
        "from what the taxi driver told us, ",
        "my sister stayed last year and said ",
    ),
    "seller_forum": (
        "a seller in my local meetup said ",
        "I keep hearing that ",
        "someone on another thread mentioned that ",
        "word on the forum is that ",
        "my friend who runs a bigger store says ",
        "from what I've read here, ",
        "a few sellers in our group chat say ",
        "my account manager hinted that ",
        "apparently ",
    ),
}
PERSONAL_PREFIXES = {
    "hotels": ("in my experience, ", "for us, ", "personally, ", "honestly, ", "on our stay, ", "from what I saw, "),
    "seller_forum": (
        "in my experience, ",
        "for my store, ",
        "speaking for our shop, ",
        "from my side, ",
        "personally, ",
        "honestly, ",
    ),
}
DATA_PREFIXES = {
    "hotels": ("for the record, ", "I kept count: ", "to put numbers on it, ", "in numbers: ", "some hard facts: "),
    "seller_forum": (
        "pulled the numbers this morning: ",
        "from our dashboard: ",
        "for the record, ",
        "our reports say it all: ",
        "data point for the thread: ",
        "going by our sales reports, ",
    ),
}
#: Wrappers that turn an opinion clause into a counted (data-driven) statement. `{core}` is the clause.
DATA_WRAPPERS = {
    "hotels": (
        "{core} on {k} of my {t} stays here",
        "I've been here {t} times now, and {core} on {k} of them",
        "I keep notes on every hotel I stay in: {core}, {k} nights out of {t}",
    ),
    "seller_forum": (
        "we track this weekly, and {core} {k} weeks out of the last {t}",
        "I logged it for {t} days: {core} on {k} of them",
        "across our {t} stores, {core} for {k} of them",
    ),
}

# ---------------------------------------------------------------------------------------------------------------
# Document furniture
# ---------------------------------------------------------------------------------------------------------------

OTHER = {
    "hotels": (
        "the place down the road",
        "most hotels in this price range",
        "the hotel we stayed at last year",
        "the big chain hotels nearby",
        "other places in town",
    ),
    "seller_forum": (
        "the other marketplaces",
        "our own webshop",
        "the competition",
        "what we had last year",
        "the other big platform",
    ),
}
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ORDINALS = ("second", "third", "fourth", "fifth", "sixth", "seventh")

HOTEL_TRAVELLER_HINTS = {
    "business": (
        "Here for work, {nights} nights.",
        "Stayed {nights} nights on a business trip.",
        "Work trip, the company booked it.",
        "In town for a conference.",
    ),
    "couple": (
        "Weekend away with my partner.",
        "Anniversary trip, {nights} nights.",
        "My wife and I stayed {nights} nights.",
        "My husband and I came for a short break.",
    ),
    "family": (
        "Stayed with our {r} kids for a few nights.",
        "Family trip with two teenagers.",
        "Travelled with the grandparents and the kids.",
        "Half-term break with the children.",
    ),
    "solo": (
        "Travelling solo for {nights} nights.",
        "Stayed alone while visiting the city.",
        "Solo city break.",
        "Just me this time, {nights} nights.",
    ),
    "friends": (
        "Weekend with {r} friends.",
        "A group of us were in town for a concert.",
        "Birthday weekend with old friends.",
        "Stayed with a few mates for a football match.",
    ),
}
HOTEL_EXPERIENCE_HINTS = {
    "novice": ("First time leaving a review.", "Don't usually write reviews, but here goes."),
    "regular": (
        "This was our second time here.",
        "Our third stay here.",
        "We've stayed here a couple of times before.",
    ),
    "expert": (
        "I stay in {t} hotels a year and write up most of them.",
        "Frequent reviewer here, so take this in context.",
    ),
}
HOTEL_OPENERS = (
    "Stayed {nights} nights at {hotel} in {month}.",
    "We booked {hotel} for a long weekend.",
    "{nights} nights at {hotel}, {month}.",
    "Booked {hotel} last minute in {month}.",
    "Our {nights}-night stay at {hotel}, in short.",
    "Back home after {nights} nights at {hotel}.",
    "Quick review after a short stay at {hotel}.",
    "Just back from {hotel}.",
    "We were at {hotel} over the {month} holidays.",
)
HOTEL_FILLER = (
    "We walked to the old town most days.",
    "Parking was across the road.",
    "We had room {r}{r}{r}.",
    "We were out sightseeing most of the time.",
    "Checked out on a {weekday}.",
    "The hotel seemed about {r}0% full.",
    "We ate out most evenings.",
    "We drove down from the north.",
    "Our room faced the {side}.",
    "The lifts are to the left of the entrance.",
    "We had a room on the {ordinal} floor.",
    "Booked through the hotel website about {r} weeks ahead.",
    "We arrived late on a {weekday}.",
    "Our flight was delayed, so we got in around midnight.",
    "The hotel is part of a small chain.",
    "The museum is a short cab ride away.",
    "It rained most of the week.",
    "We had a corner room.",
    "There's a supermarket two streets away.",
)
HOTEL_CLOSERS = {
    "positive": (
        "Would happily stay again.",
        "We'll be back.",
        "Recommended.",
        "Would book again without thinking.",
        "{stars}/5 from us.",
        "Already looking at dates for next {month}.",
        "Thanks to the team!",
        "Worth every penny overall.",
    ),
    "mixed": (
        "Might come back if the price is right.",
        "Overall, fine for a night or two.",
        "Some things to fix, but not a bad stay.",
        "Hard to give an overall verdict.",
        "{stars}/5, on balance.",
        "Would consider it again for a short trip.",
        "Good in parts.",
    ),
    "negative": (
        "Won't be returning.",
        "Can't recommend, sadly.",
        "We'll try somewhere else next time.",
        "Not for us.",
        "{stars}/5 is generous.",
        "Management, please take note.",
        "Look elsewhere at this price.",
    ),
}
HOTEL_TITLES = {
    "positive": ("Lovely stay", "Would come back", "Great base for exploring", "Better than expected", "Solid choice"),
    "mixed": ("Mixed feelings", "Good and bad", "Some hits, some misses", "Decent but not great"),
    "negative": ("Disappointing", "Never again", "Needs work", "Not worth the money"),
}
TITLE_LABELS = {
    "positive": ("Great", "Lovely", "Excellent", "Good", "Fab"),
    "neutral": ("OK", "Average", "So-so"),
    "negative": ("Poor", "Awful", "Bad", "Terrible", "Meh"),
}

FORUM_OPENERS = (
    "Hi all,",
    "Long-time lurker, first post.",
    "Quick question for the group.",
    "Hello from a {weekday} night.",
    "Sorry if this has been asked before.",
    "Another week, another issue.",
    "Hoping someone here can help.",
    "Not sure where else to post this.",
    "Evening, folks.",
    "Been meaning to post this for a while.",
    "Not sure if this is the right board, but here goes.",
    "Following up on my post from last week.",
    "Hey everyone,",
    "Morning all.",
)
FORUM_REPLY_OPENERS = (
    "+1.",
    "+1, same here.",
    "Replying to @{handle}:",
    "Bumping this thread.",
    "Same boat as the OP.",
)
FORUM_FILLER = (
    "Posting from my phone, sorry for the formatting.",
    "For context, we ship about {t} orders a week.",
    "I searched the forum first and found nothing recent.",
    "Mods, feel free to move this.",
    "We sell mostly home goods.",
    "Long story short, read on.",
    "We're a two-person team.",
    "Edit: fixed the title.",
    "We've been on {r} marketplaces over the years.",
    "Q4 is around the corner, so timing matters.",
    "This is on the {region_word} marketplace.",
    "Our busiest month is usually {month}.",
    "Half our catalogue is seasonal.",
)
FORUM_CLOSERS = (
    "Thanks in advance.",
    "Any advice appreciated.",
    "Would love to hear how others handle it.",
    "Cheers.",
    "Thoughts?",
    "Rant over.",
    "Anyone else?",
    "Appreciate any pointers.",
    "Will update if I hear back.",
    "Curious what others are seeing.",
    "Rant over, back to packing orders.",
    "DMs open if you want details.",
    "Edit: added numbers.",
    "Thanks for reading this far.",
)
FORUM_TITLES = (
    "{short} - anyone else?",
    "Question about {short}",
    "PSA: {short}",
    "{Short} again?!",
    "Finally some good news on {short}",
    "Help with {short}",
    "{Short} rant",
    "Thoughts on {short}?",
    "Re: {short}",
    "{Short} update",
)
FORUM_REVENUE_HINTS = {
    "<10k": ("I'm a tiny shop, maybe {t} orders a month.", "Side hustle seller here."),
    "10k-100k": ("Small business, a few hundred SKUs, doing alright.", "We're a small shop but growing."),
    "100k-1M": ("We do mid six figures a year.", "Team of {r}, decent volume."),
    ">1M": ("We do over ${r}M a year across several channels.", "Large seller, {r} warehouses."),
}
FORUM_TENURE_HINTS = {
    "<1y": ("New seller here, {r} months in.", "Only started selling this year."),
    "1-3y": ("Been selling here about two years.", "A couple of years on the platform now."),
    "3-5y": ("Selling here since {since}.",),
    ">5y": ("Been on the platform since {since}.", "Veteran seller, seen a lot of changes."),
}
FORUM_REGION_MARKETS = {
    "NA": ("US", "Canadian"),
    "EU": ("German", "French", "Spanish", "Italian"),
    "APAC": ("Australian", "Japanese"),
    "LATAM": ("Mexican", "Brazilian"),
}
HOTEL_ROOM_SIDES = ("street", "courtyard", "river", "car park", "back")
FORUM_REGION_HINTS = {
    "NA": ("US seller here.", "Canadian seller, for context.", "We ship from Ohio."),
    "EU": ("Selling from Germany.", "EU seller (Spain).", "We're in the Netherlands."),
    "APAC": ("Shipping from Australia.", "Seller based in Japan.", "We're in Singapore."),
    "LATAM": ("Selling from Mexico.", "Brazil-based seller.", "We're in Chile."),
}

HOTEL_FIRST_NAMES = (
    "anna",
    "marco",
    "julia",
    "tom",
    "priya",
    "lena",
    "omar",
    "sofia",
    "ben",
    "kate",
    "li",
    "noah",
    "eva",
    "sam",
    "maya",
    "luis",
    "ines",
    "jon",
    "ravi",
    "zoe",
    "nils",
    "ada",
    "ivan",
    "ella",
    "hugo",
    "mia",
    "theo",
    "rosa",
    "felix",
    "nora",
)
HOTEL_HANDLE_WORDS = ("traveller", "wanderer", "explorer", "globetrotter", "tourist", "nomad", "roamer", "visitor")
FORUM_HANDLE_WORDS = (
    "oak",
    "thread",
    "maple",
    "north",
    "craft",
    "pixel",
    "harbor",
    "copper",
    "river",
    "sunny",
    "atlas",
    "bright",
    "cedar",
    "fox",
    "nimbus",
    "pebble",
    "summit",
    "velvet",
    "willow",
    "zen",
)
FORUM_HANDLE_SUFFIX = ("goods", "supply", "co", "store", "trading", "shop", "house", "market", "labs", "outlet")

# Author attributes and how they steer which entities an author writes about (multipliers on entity weights).
HOTEL_TRAVELLER_TYPES = ("business", "couple", "family", "solo", "friends")
HOTEL_TRAVELLER_WEIGHTS = (0.25, 0.30, 0.20, 0.12, 0.13)
HOTEL_TRAVELLER_FOCUS = {
    "business": {"wifi": 2.5, "checkin": 1.5, "pool": 0.4, "bar": 0.8},
    "couple": {"restaurant": 1.5, "bar": 1.5},
    "family": {"pool": 2.5, "breakfast": 1.4, "bar": 0.4},
    "solo": {"public_transport": 1.5, "neighbourhood": 1.3},
    "friends": {"bar": 2.0, "neighbourhood": 1.3},
}
FORUM_REVENUE_BANDS = ("<10k", "10k-100k", "100k-1M", ">1M")
FORUM_REVENUE_WEIGHTS = (0.35, 0.35, 0.22, 0.08)
FORUM_TENURES = ("<1y", "1-3y", "3-5y", ">5y")
FORUM_TENURE_WEIGHTS = (0.20, 0.35, 0.25, 0.20)
FORUM_REGIONS = ("NA", "EU", "APAC", "LATAM")
FORUM_REGION_WEIGHTS = (0.40, 0.30, 0.18, 0.12)
FORUM_FOCUS = {
    ("revenue_band", "<10k"): {"referral_fee": 1.5, "new_fulfilment_fee": 1.3, "sponsored_ads": 0.5},
    ("revenue_band", ">1M"): {"sponsored_ads": 2.0, "storage_fees": 1.5, "payment_holds": 1.3},
    ("tenure", "<1y"): {"category_approval": 2.0, "account_suspension": 1.3},
    ("region", "APAC"): {"carrier_delays": 1.6},
    ("region", "LATAM"): {"carrier_delays": 1.6, "payment_holds": 1.3},
}

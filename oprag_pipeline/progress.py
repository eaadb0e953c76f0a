"""Progress of a long step as log lines with rate and ETA: extraction shards and index writes report the same way."""

from __future__ import annotations

import time
from collections.abc import Callable

# At most one progress line per this many seconds (checked after each unit of work): an hour-long step shows its
# rate and ETA all along in a few hundred lines, not one per batch.
PROGRESS_EVERY_S = 15.0


def format_eta(seconds: float) -> str:
    """'42 s', '12 min', '3.4 h': an ETA readable at a glance."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """Done/total with rate and ETA, logged at most every `every_s` seconds (and at the end)."""

    def __init__(self, label: str, total: int, log: Callable[[str], None], every_s: float = PROGRESS_EVERY_S):
        self.label, self.total, self.log, self.every_s = label, total, log, every_s
        self.started = self.last = time.perf_counter()
        self.done = 0

    def advance(self, n: int, note: str = "") -> None:
        self.done += n
        now = time.perf_counter()
        if now - self.last < self.every_s and self.done < self.total:
            return
        self.last = now
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = format_eta((self.total - self.done) / rate) if rate > 0 else "unknown"
        share = self.done / self.total if self.total else 1.0
        self.log(
            f"{self.label}: {self.done:,}/{self.total:,} ({share:.0%}) in {format_eta(elapsed)}, "
            f"{rate:,.0f}/s, ETA {eta}{note}"
        )

"""The step contract: a step takes a shard (a small description of where its input lies) and
returns what it keeps as a table plus :class:`Counts` of what it read and what it dropped, with
the reason.  Counts of shards add up, so the same step gives the same report whether it ran in a
test, on the local pool or on a Dask cluster, over one shard or thousands.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa


@dataclass
class Counts:
    """What a step read (``stats``), what it dropped by reason (``dropped``), per-key tallies
    (``tallies["sources"]["Berita Harian"]["kept"]``) and notes (facts, not counts)."""

    stats: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    tallies: dict[str, dict[str, Counter]] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)

    def tally(self, name: str, key: str, what: str, n: int = 1) -> None:
        self.tallies.setdefault(name, {}).setdefault(key, Counter())[what] += n

    def add(self, other: Counts) -> Counts:
        self.stats.update(other.stats)
        self.dropped.update(other.dropped)
        for name, keys in other.tallies.items():
            for key, counter in keys.items():
                self.tallies.setdefault(name, {}).setdefault(key, Counter()).update(counter)
        self.notes |= other.notes
        return self

    def report(self) -> dict:
        """Sorted, JSON-ready; zero counts left out."""
        out: dict[str, Any] = {k: int(v) for k, v in sorted(self.stats.items()) if v}
        out["dropped"] = {k: int(v) for k, v in sorted(self.dropped.items()) if v}
        for name, keys in sorted(self.tallies.items()):
            out[name] = {key: {k: int(v) for k, v in sorted(c.items())} for key, c in sorted(keys.items())}
        if self.notes:
            out["notes"] = sorted(self.notes)
        return out


def total(counts) -> Counts:
    out = Counts()
    for c in counts:
        out.add(c)
    return out


@dataclass
class StepResult:
    """A step's output for one shard: the rows it keeps (None: it writes no dataset), its counts,
    and an optional payload for the driver (small: a report to merge, a few keys)."""

    table: pa.Table | None
    counts: Counts = field(default_factory=Counts)
    payload: Any = None

"""Heat-decay context management for history turns and retrieved passages (docs/product.md).

Every item that may go into a prompt (a history turn, a retrieved passage) carries a
heat value. After each turn, an item that was used gets +1; an item that went unused
is multiplied by ``decay`` (0.95); an item whose heat falls below ``drop_below`` (0.3)
is dropped. A new item starts at 1.0, so an item nobody uses again survives
``ceil(log(0.3) / log(0.95)) = 24`` turns. When the prompt has a size budget, the
hottest items win and the kept ones stay in their original order.

"Used" is decided by the caller: the dialogue counts a history turn as used when it
shares content words with the new question (``overlaps``), and L2 counts a passage as
used when it was retrieved or cited. The state is a small JSON-able dict, so it is
kept in the conversation's state between turns.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_WORD = re.compile(r"[a-z0-9]{3,}|[\u4e00-\u9fff]")
_STOP = {
    "the",
    "and",
    "you",
    "your",
    "for",
    "are",
    "was",
    "what",
    "how",
    "can",
    "with",
    "this",
    "that",
    "have",
    "not",
    "please",
    "的",
    "了",
    "我",
    "你",
    "是",
    "吗",
}


def item_id(kind: str, text: str) -> str:
    return kind + ":" + hashlib.sha1(text.encode()).hexdigest()[:12]


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def overlaps(a: str, b: str, minimum: int = 1) -> bool:
    return len(content_words(a) & content_words(b)) >= minimum


@dataclass
class HeatContext:
    decay: float = 0.95
    drop_below: float = 0.3
    heat: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_state(cls, data: dict[str, float] | None, *, decay: float, drop_below: float):
        return cls(decay=decay, drop_below=drop_below, heat=dict(data or {}))

    def to_state(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in self.heat.items()}

    def add(self, ids: Iterable[str]) -> None:
        """New items start at 1.0; known ones keep their heat."""
        for key in ids:
            self.heat.setdefault(key, 1.0)

    def step(self, used: Iterable[str]) -> list[str]:
        """End of a turn: +1 for used items, x decay for the others; returns the ids
        dropped this turn. A dropped item is remembered at heat 0 (so it does not come
        back as new); if it is used again it returns with heat 1."""
        used_set = set(used)
        dropped = []
        for key in list(self.heat):
            if key in used_set:
                self.heat[key] += 1.0
            elif self.heat[key] > 0:
                self.heat[key] *= self.decay
                if self.heat[key] < self.drop_below:
                    dropped.append(key)
                    self.heat[key] = 0.0
        return dropped

    def alive(self, key: str) -> bool:
        return self.heat.get(key, 0.0) > 0

    def select(self, items: list[tuple[str, str]], *, budget_chars: int) -> list[tuple[str, str]]:
        """Keep the hottest ``(id, text)`` items that fit ``budget_chars``, in order."""
        live = [(i, (key, text)) for i, (key, text) in enumerate(items) if self.alive(key)]
        by_heat = sorted(live, key=lambda x: (-self.heat[x[1][0]], -x[0]))
        kept: set[int] = set()
        used = 0
        for index, (_key, text) in by_heat:
            if used + len(text) > budget_chars:
                continue
            kept.add(index)
            used += len(text)
        return [item for i, item in enumerate(items) if i in kept]


def history_select(
    *,
    history: list[tuple[str, str]],
    question: str,
    heat_state: dict[str, float] | None,
    decay: float,
    drop_below: float,
    budget_chars: int,
) -> tuple[list[tuple[str, str]], dict[str, float]]:
    """One turn of heat bookkeeping for chat history; returns the turns to send and the
    new state (only the turns still in view are kept, so the state stays small).

    A turn is used when it shares a content word with the question; the turn just
    before the question is always used (it is what "it" and "that" refer to)."""
    ctx = HeatContext.from_state(heat_state, decay=decay, drop_below=drop_below)
    keyed = [(item_id("turn", f"{role}:{text}"), role, text) for role, text in history]
    ctx.add(key for key, _r, _t in keyed)
    used = {key for key, _r, text in keyed if overlaps(text, question)}
    if keyed:
        used.add(keyed[-1][0])
    ctx.step(used)
    kept = {
        key for key, _t in ctx.select([(k, t) for k, _r, t in keyed], budget_chars=budget_chars)
    }
    in_view = {key for key, _r, _t in keyed}
    ctx.heat = {k: v for k, v in ctx.heat.items() if k in in_view}
    return [(role, text) for key, role, text in keyed if key in kept], ctx.to_state()

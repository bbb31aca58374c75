"""One answerer per tier behind one interface (``base.Answerer``): ``plan`` in the
turn's worker thread, then ``stream`` on the event loop. ``ANSWERERS`` is the one place
that says which answerer answers for which tier."""

from __future__ import annotations

from routing import types as rt

from .base import Answerer
from .clarify import ClarifyAnswerer
from .l1 import L1Answerer
from .l2 import L2Answerer
from .l3 import L3Answerer

ANSWERERS: dict[str, Answerer] = {
    rt.L1: L1Answerer(),
    rt.L2: L2Answerer(),
    rt.L3: L3Answerer(),
    rt.CLARIFY: ClarifyAnswerer(),
}


def answerer_for(tier: str) -> Answerer:
    """The tier's answerer; a tier without one (never planned today) answers as L1."""
    return ANSWERERS.get(tier, ANSWERERS[rt.L1])

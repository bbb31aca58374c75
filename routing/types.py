"""What the router returns, and the intent names other apps rely on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Tiers. "clarify" is not a model tier: the bot asks a clarifying question.
L1, L2, L3, CLARIFY = "L1", "L2", "L3", "clarify"

# L1 intents (templated, answered from order data).
ORDER_STATUS = "order_status"
DELIVERY_TIME = "delivery_time"
CANCEL_ORDER = "cancel_order"
CHANGE_ADDRESS = "change_address"
REFUND_STATUS = "refund_status"
SHIPPING_COST = "shipping_cost"
ACCOUNT_HELP = "account_help"
# Returns and exchanges of a delivered order's items: listed,
# confirmed with an explicit "yes", performed by deterministic code like a cancel.
RETURN_ITEM = "return_item"
EXCHANGE_ITEM = "exchange_item"
GREETING = "greeting"  # small talk: hello / thanks / bye, answered from a template
# Routes to the other tiers.
KNOWLEDGE_QUESTION = "knowledge_question"  # L2
COMPLEX_QUESTION = "complex_question"  # L3
OUT_OF_SCOPE = "out_of_scope"  # clarify
# A role-play, jailbreak or prompt-extraction attempt (routing/roleplay.py): clarify
# tier, whose template says what the bot can help with; no model reply.
ROLE_PLAY = "role_play"
# The shopper asks for a person (human handoff, docs/desk.md): routing/handoff_detect.py
# (the "handoff-request" rule and a scorer of its own), no classifier examples.
HANDOFF = "handoff"

L1_INTENTS = (
    ORDER_STATUS,
    DELIVERY_TIME,
    CANCEL_ORDER,
    CHANGE_ADDRESS,
    REFUND_STATUS,
    RETURN_ITEM,
    EXCHANGE_ITEM,
    SHIPPING_COST,
    ACCOUNT_HELP,
    GREETING,
)
# Intents whose answer needs a verified shopper and an order.
ORDER_INTENTS = (
    ORDER_STATUS,
    DELIVERY_TIME,
    CANCEL_ORDER,
    CHANGE_ADDRESS,
    REFUND_STATUS,
    RETURN_ITEM,
    EXCHANGE_ITEM,
)


@dataclass(frozen=True)
class RouteDecision:
    tier: str
    intent: str
    confidence: float
    # Extracted slots, e.g. {"order_id": "#1001", "email": "..."}.
    slots: dict[str, str] = field(default_factory=dict)
    # Why: {"kind": "rule", "rule": name, ...} or
    # {"kind": "classifier", "top": [[intent, score], ...]} or {"kind": "clarify", ...}.
    reason: dict[str, Any] = field(default_factory=dict)
    elapsed_ms: float = 0.0

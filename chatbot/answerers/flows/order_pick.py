"""Which order the shopper means when the message names none. An action (cancel, new
address, return, exchange) is offered only the orders it can be done to
(``eligible``): one is taken as meant, several are asked about with their items as
buttons, and when none qualifies the reply says so and why instead of listing orders
the action would refuse. A read-only question (status, delivery, refund) may be about
any order."""

from __future__ import annotations

from chatbot.orders.types import OrderFacts
from routing import types as rt

from ..base import AnswerPlan, TurnContext, say
from ..order_format import STATUS_TEXT
from .eligible import ACTION_STATUSES, RETURN_INTENTS, order_allows, status_allows

# The most orders a "which order?" question lists.
LISTED = 10


def order_pick(ctx: TurnContext, intent: str) -> str | AnswerPlan:
    """The id of the order ``intent`` is about, or the reply that asks which (or says
    there is none to ask about)."""
    state = ctx.state
    orders = ctx.orders().orders_for_customer(customer_id=ctx.customer_id)
    if not orders:
        return say(ctx, "dialogue", "no_orders", label=intent)
    if len(orders) == 1:
        # The only order: its flow answers, or refuses with its own reason.
        return orders[0].order_id
    # The order the conversation is about, for a question on it or a new address for
    # it ("change its address"); a cancel or a return is always asked about.
    if state.get("last_order_id") and intent not in (rt.CANCEL_ORDER, *RETURN_INTENTS):
        return str(state["last_order_id"])
    if intent not in ACTION_STATUSES:
        status_words = STATUS_TEXT.get(ctx.language, STATUS_TEXT["en"])
        labels = [f"{o.order_id} ({status_words.get(o.status, o.status)})" for o in orders]
        return _ask(ctx, intent, orders, labels, "dialogue", ", ")
    allowed = [o for o in orders if order_allows(intent, o)]
    if len(allowed) == 1:
        return allowed[0].order_id
    if allowed:
        labels = [f"{o.order_id} ({', '.join(i.name for i in o.items)})" for o in allowed]
        return _ask(ctx, intent, allowed, labels, intent, "；" if ctx.language == "zh" else "; ")
    return _none_allowed(ctx, intent, orders)


def _ask(
    ctx: TurnContext,
    intent: str,
    orders: list[OrderFacts],
    labels: list[str],
    template: str,
    sep: str,
) -> AnswerPlan:
    """Ask which order, the listed ones as buttons. The answer is read by order id,
    place, item name, status or date (dialogue: "order")."""
    orders, labels = orders[:LISTED], labels[:LISTED]
    ctx.state.update(
        awaiting="order", pending_intent=intent, order_choices=[o.order_id for o in orders]
    )
    plan = say(
        ctx, template, "ask_order", {"orders": sep.join(labels)}, personal=True, label=intent
    )
    plan.choices = labels
    return plan


def _none_allowed(ctx: TurnContext, intent: str, orders: list[OrderFacts]) -> str | AnswerPlan:
    """None of the shopper's orders allows the action: say so and why. Delivered orders
    all past the return window are one case of their own (a person can look at them);
    the only delivered one gets its own refusal, with its dates."""
    if intent not in RETURN_INTENTS:
        return say(ctx, intent, "none_allowed", personal=True)
    delivered = [o for o in orders if status_allows(intent, o)]
    if len(delivered) == 1:
        return delivered[0].order_id
    return say(ctx, intent, "none_in_window" if delivered else "no_delivered", personal=True)

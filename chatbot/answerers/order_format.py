"""How an order reads in a reply: the status and payment words, dates, money, tracking
links, the shipping options, the facts a template fills in (``order_facts``,
``returns_facts``), item lines and numbered lists, and the order id as the shopper
types it and as a reply shows it."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from django.utils import timezone

from chatbot.orders.policy import return_conditions, return_window_days
from chatbot.orders.types import OrderFacts, OrderItem
from routing.order_ids import order_id_find
from shop.profile import shop_profile

from .base import TurnContext

STATUS_TEXT = {
    "en": {
        "pending": "pending",
        "processed": "shipped",
        "delivered": "delivered",
        "cancelled": "cancelled",
        "return requested": "return requested",
        "exchange requested": "exchange requested",
    },
    "zh": {
        "pending": "待处理",
        "processed": "已发货",
        "delivered": "已送达",
        "cancelled": "已取消",
        "return requested": "已申请退货",
        "exchange requested": "已申请换货",
    },
}
PAYMENT_TEXT = {
    "en": {"credit_card": "credit card", "gift_card": "gift card", "paypal": "PayPal account"},
    "zh": {"credit_card": "信用卡", "gift_card": "礼品卡", "paypal": "PayPal账户"},
}
# The word that calls an order late; a fact, so the fact guard requires it.
LATE_TEXT = {"en": "late", "zh": "延误"}
# The carriers' public tracking pages: a late order's reply links to its tracking.
CARRIER_TRACKING_URLS = {
    "UPS": "https://www.ups.com/track?tracknum={tracking}",
    "FedEx": "https://www.fedex.com/fedextrack/?trknbr={tracking}",
    "USPS": "https://tools.usps.com/go/TrackConfirmAction?tLabels={tracking}",
    "DHL": "https://www.dhl.com/global-en/home/tracking.html?tracking-id={tracking}",
}
# Statuses whose estimated delivery can pass without the order arriving.
OPEN_STATUSES = {"pending", "processed"}


def is_late(order: OrderFacts) -> bool:
    """Past its estimated delivery date and neither delivered nor cancelled."""
    eta = order.estimated_delivery
    return order.status in OPEN_STATUSES and eta is not None and eta < timezone.localdate()


def tracking_url(carrier: str, tracking: str) -> str:
    template = CARRIER_TRACKING_URLS.get(carrier)
    return template.format(tracking=tracking) if template and tracking else ""


def refund_timing(payment_method: str, lang: str) -> str:
    """When a refund to this payment method arrives (shop profile)."""
    return shop_profile().refund_timing(payment_method, lang)


def shipping_text(ctx: TurnContext) -> str:
    parts = []
    for opt in ctx.orders().shipping_options():
        if ctx.language == "zh":
            text = f"{opt.name} {money(opt.price)}（{opt.days_min}-{opt.days_max}个工作日"
            text += f"，满{money(opt.free_over)}免运费）" if opt.free_over else "）"
        else:
            days = f"{opt.days_min}-{opt.days_max} business days"
            text = f"{opt.name} {money(opt.price)} ({days}"
            text += f", free over {money(opt.free_over)})" if opt.free_over else ")"
        parts.append(text)
    return "; ".join(parts)


def delivery_times_text(ctx: TurnContext) -> str:
    """The shipping options as delivery times: "Standard ($5.99) takes 3-7 business
    days; Express ($14.99) takes 1-2 business days"."""
    parts = []
    for opt in ctx.orders().shipping_options():
        if ctx.language == "zh":
            parts.append(f"{opt.name}（{money(opt.price)}）{opt.days_min}-{opt.days_max}个工作日")
        else:
            parts.append(
                f"{opt.name} ({money(opt.price)}) takes {opt.days_min}-{opt.days_max} business days"
            )
    return ("；" if ctx.language == "zh" else "; ").join(parts)


def fmt_date(value: date | None, language: str) -> str:
    if value is None:
        return ""
    if language == "zh":
        return f"{value.year}年{value.month}月{value.day}日"
    return value.strftime("%b ") + str(value.day) + value.strftime(", %Y")


def fmt_money(value: Decimal) -> str:
    return f"{value:.2f}"


def money(value: Decimal) -> str:
    """An amount with the shop's currency symbol (shop profile): "$47.84"."""
    return shop_profile().currency_symbol + fmt_money(value)


def order_facts(order: OrderFacts, language: str) -> dict[str, str]:
    lang = language if language in STATUS_TEXT else "en"
    timing = refund_timing(order.payment_method, lang)
    return {
        "order_id": order.order_id,
        "status": order.status,
        "status_text": STATUS_TEXT[lang].get(order.status, order.status),
        "item_count": str(len(order.items)),
        "items": ", ".join(item.name for item in order.items),
        "total": fmt_money(order.total),
        "carrier": order.carrier,
        "tracking": order.tracking_ids[0] if order.tracking_ids else "",
        "eta": fmt_date(order.estimated_delivery, lang),
        "refund": fmt_money(sum(order.refunds, Decimal(0))),
        "payment_method": PAYMENT_TEXT[lang].get(order.payment_method, order.payment_method),
        "refund_timing": timing,
        "return_shipping": shop_profile().return_shipping(lang),
        "address": order.address.one_line(),
        "track_url": tracking_url(
            order.carrier, order.tracking_ids[0] if order.tracking_ids else ""
        ),
    }


def returns_facts(
    ctx: TurnContext, order: OrderFacts, items: list[OrderItem] | None = None
) -> dict[str, str]:
    """The order's facts with the return policy for ``items`` (all the order's items
    when not chosen yet), from the shop profile: ``window_days``, ``deadline``,
    ``window_clause`` ("it must be requested by ... (N days from purchase)"),
    ``window_span`` ("within N days of purchase") and ``conditions``."""
    lang = reply_language(ctx)
    names = [item.name for item in (order.items if items is None else items)]
    days = return_window_days(names)
    deadline = fmt_date(order.placed_on + timedelta(days=days), lang) if days is not None else ""
    if days is None:
        clause, span = WINDOW_TEXT[lang]["any_clause"], WINDOW_TEXT[lang]["any_span"]
    else:
        clause = WINDOW_TEXT[lang]["clause"].format(deadline=deadline, days=days)
        span = WINDOW_TEXT[lang]["span"].format(days=days)
    return order_facts(order, ctx.language) | {
        "window_days": "" if days is None else str(days),
        "deadline": deadline,
        "window_clause": clause,
        "window_span": span,
        "conditions": return_conditions(names, lang),
        "placed_on": fmt_date(order.placed_on, lang),
    }


# How a return window reads inside the return and exchange templates.
WINDOW_TEXT = {
    "en": {
        "clause": "it must be requested by {deadline} ({days} days from purchase)",
        "span": "within {days} days of purchase",
        "any_clause": "there is no time limit",
        "any_span": "at any time",
    },
    "zh": {
        "clause": "须在{deadline}前（购买后{days}天内）申请",
        "span": "在购买后{days}天内",
        "any_clause": "没有时间限制",
        "any_span": "随时",
    },
}


def options_text(options: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in options.items())


def item_line(item: OrderItem) -> str:
    options = options_text(item.options)
    return f"{item.name} ({options}, {money(item.price)})" if options else item.name


def numbered_list(lines: list[str], language: str) -> str:
    sep = "；" if language == "zh" else "; "
    return sep.join(f"{n}. {line}" for n, line in enumerate(lines, start=1))


def reply_language(ctx: TurnContext) -> str:
    return ctx.language if ctx.language in STATUS_TEXT else "en"


def find_order_id(text: str) -> str:
    return order_id_find(text) or ""


def display_id(order_id: str) -> str:
    return order_id_find(order_id) or order_id[:20]

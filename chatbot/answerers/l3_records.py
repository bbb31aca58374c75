"""The shop's records the large tier (L3) answers from: the shopper's own orders, the
catalogue rows the question names with the products' descriptions and options, and the
relevant help-article passages.

Built in ``L3Answerer.plan`` (the turn's worker thread: database reads, retrieval),
within a token budget (``TIERDESK_L3_CONTEXT_TOKENS``). The same text is what the
reply is checked against (``reply_guards.GroundedGuard``): every order id, amount and date
in the reply must appear in it, and every claim must be entailed by it. So the prompt
holds exactly what the bot may say and nothing else.

Why context in the prompt and not tools (OpenAI function calling): the question's
needs are found without a model (order words, product names, retrieval), the whole
context fits in a few hundred tokens, and the checker needs the same text the model
saw. Tools would add a round trip per call on the 500 ms first-token budget and
depend on the remote model supporting them; the local stand-in (Qwen 0.5B under
llama.cpp) does not call them reliably.

Privacy: orders come only through ``OrderService.orders_for_customer`` with the
conversation's verified ``customer_id``, so another shopper's order can't be read;
an anonymous shopper gets no order data at all.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.conf import settings

from chatbot.orders.types import OrderFacts, OrderService, OrderServiceError
from routing.order_ids import order_id_find
from shop.profile import shop_profile

if TYPE_CHECKING:
    from shop.catalogue import ProductFacts

logger = logging.getLogger(__name__)

# Words that say the question is about the shopper's own orders (and so needs them).
_ORDER_WORDS = re.compile(
    r"\b(orders?|refund\w*|returns?|returned|deliver\w*|shipp\w*|shipment|package|parcel|"
    r"track\w*|purchase\w*|bought|paid|payment|charged?|cancel\w*|arriv\w*|my)\b"
    r"|订单|退款|退货|物流|快递|发货|配送|付款|我的",
    re.IGNORECASE,
)
# Questions after the cheap end of the catalogue: rows cheapest first, else dearest first.
_CHEAP_WORDS = re.compile(
    r"\b(cheap\w*|budget|affordable|inexpensive|lowest|least expensive)\b|便宜|实惠|最低",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z]+")
# A product description in the L3 context: enough for what a shopper asks of one
# product, short enough that six products' stay within the catalogue's share.
DESCRIPTION_CHARS = 300

LABELS = {
    "en": {
        "orders": "Your orders (newest first)",
        "no_orders": "You have no orders on record.",
        "anonymous": "You are not signed in, so your orders are not available.",
        "no_refunds": "There is no refund on record for any of your orders.",
        "catalogue": "Catalogue",
        "products": "Products",
        "articles": "Help articles",
    },
    "zh": {
        "orders": "您的订单（最新的在前）",
        "no_orders": "您没有任何订单记录。",
        "anonymous": "您未登录，无法查看您的订单。",
        "no_refunds": "您的所有订单都没有退款记录。",
        "catalogue": "商品目录",
        "products": "商品介绍",
        "articles": "帮助文章",
    },
}

# The lines that only say what the records hold (not signed in, no orders, no refund).
SUMMARY_LINES = frozenset(
    labels[key] for labels in LABELS.values() for key in ("no_orders", "anonymous", "no_refunds")
)


@dataclass(frozen=True)
class CatalogueRow:
    """One variant of a product as the shop sells it."""

    product: str
    item_id: str
    options: dict[str, str]
    price: Decimal
    available: bool
    currency: str  # the shop's currency symbol (shop profile), printed before the price

    def line(self, rank: int) -> str:
        # Commas only (no ";" or "but"): the entailment check aligns a claim with one
        # clause, and a row must be one clause so "the black one costs $198" finds it.
        opts = ", ".join(f"{k} {v}" for k, v in self.options.items())
        # "sold out", not "not available": a negation in the row would read as a flipped
        # polarity against every claim aligned with it ("it costs $198").
        stock = "available" if self.available else "sold out"
        return (
            f"{rank}. {self.product}, item {self.item_id}, {opts}, "
            f"price {self.currency}{self.price}, {stock}."
        )

    def short(self) -> str:
        """The row as a shopper reads it (the abstain reply's extract)."""
        stock = "available" if self.available else "sold out"
        opts = f" ({', '.join(self.options.values())})" if self.options else ""
        return f"{self.product}{opts} at {self.currency}{self.price}, {stock}."


@dataclass
class ShopContext:
    """What the L3 prompt carries, and what its reply is checked against."""

    language: str
    order_lines: list[str] = field(default_factory=list)
    # The same orders as one-fact sentences (``order_facts``): what replies are checked on.
    order_facts: list[str] = field(default_factory=list)
    catalogue_lines: list[str] = field(default_factory=list)
    catalogue_rows: list[CatalogueRow] = field(default_factory=list)
    # A named product's description and the options it comes in (``product_line``).
    product_lines: list[str] = field(default_factory=list)
    kb_passages: list[str] = field(default_factory=list)
    # The best help-article passage's own sentences about the question, when that
    # passage covers what the question asks ("" : none does): the abstain reply's rule.
    kb_extract: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    # The shopper's own orders were read (so the reply is personal: never cached).
    personal: bool = False
    # What was put in and why (stored in the reply's metadata, no personal data).
    explain: dict[str, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (
            self.order_lines or self.catalogue_lines or self.product_lines or self.kb_passages
        )

    def sections(self) -> list[tuple[str, list[str]]]:
        labels = LABELS.get(self.language, LABELS["en"])
        out = []
        if self.order_lines:
            out.append((labels["orders"], self.order_lines))
        if self.catalogue_lines:
            out.append((labels["catalogue"], self.catalogue_lines))
        if self.product_lines:
            out.append((labels["products"], self.product_lines))
        if self.kb_passages:
            out.append((labels["articles"], self.kb_passages))
        return out

    def text(self) -> str:
        """The records block of the prompt."""
        return "\n\n".join(
            f"{title}:\n" + "\n".join(lines) for title, lines in self.sections() if lines
        )

    def extract(self) -> str:
        """What the records plainly say, for a reply the model couldn't back: the
        order summary line (no refunds, no orders, not signed in), the first two
        catalogue rows and the help article's sentences on the question. Shop data
        word for word, so nothing in it is invented: a rule question about "this"
        purchase from a shopper nobody knows still gets the shop's rule."""
        parts = [line for line in self.order_lines if line in SUMMARY_LINES][:1]
        parts += [row.short() for row in self.catalogue_rows[:2]]
        if self.kb_extract:
            parts.append(self.kb_extract)
        return " ".join(parts)

    def passages(self) -> list[str]:
        """The context as passages for the checks: the orders' facts, then every
        catalogue row, product description and help-article passage."""
        return [*self.order_facts, *self.catalogue_lines, *self.product_lines, *self.kb_passages]


def _day(value: date) -> str:
    # Both spellings, so "Oct 7, 2026" and "2026-10-07" in a reply are found in the facts.
    return f"{value:%b} {value.day}, {value.year} ({value.isoformat()})"


def _options(options: dict[str, str]) -> str:
    # An option set to "no" (water resistance: no) is left out: a "no" in the line
    # would read as a negation against every claim about the order.
    return ", ".join(v for v in options.values() if v.strip().lower() != "no")


def order_line(order: OrderFacts, *, currency: str) -> str:
    """One order as one line of the prompt; ``currency`` is the shop's symbol."""
    cur = currency
    items = ", ".join(
        item.name + (f" ({_options(item.options)})" if item.options else "") + f" {cur}{item.price}"
        for item in order.items
    )
    parts = [
        f"Your order {order.order_id}",
        f"placed {_day(order.placed_on)}",
        f"status {order.status}",
        f"items: {items}",
        f"total {cur}{order.total}",
        f"paid by {order.payment_method.replace('_', ' ')}",
    ]
    if order.carrier:
        parts.append(f"carrier {order.carrier}")
    if order.tracking_ids:
        parts.append("tracking " + " and ".join(order.tracking_ids))
    if order.estimated_delivery is not None:
        parts.append(f"estimated delivery {_day(order.estimated_delivery)}")
    if order.refunds:
        parts.append("refunded " + " and ".join(f"{cur}{amount}" for amount in order.refunds))
    return ", ".join(parts) + "."


def order_facts(order: OrderFacts, *, currency: str) -> list[str]:
    """The same order as short sentences, one fact each, for the entailment check.

    Why not the prompt's line: the check aligns a claim with one clause and wants the
    names in that clause (items, carrier, month) restated, so "Your order #1001
    was delivered" would fail against the whole line. Each fact names the order and
    says one thing. Written to the shopper ("Your order"), as the reply is: the check
    reads a capitalised first word the records never use as a name. No "no ..." in
    any of them: a negation would flip every claim aligned with it."""
    oid, cur = order.order_id, currency
    facts = [
        f"Your order {oid} has status {order.status}.",
        f"Your order {oid} was placed on {_day(order.placed_on)}.",
    ]
    for item in order.items:
        opts = f" ({_options(item.options)})" if item.options else ""
        facts.append(f"Your order {oid} has a {item.name}{opts} at {cur}{item.price}.")
    method = order.payment_method.replace("_", " ")
    facts.append(f"Your order {oid} totals {cur}{order.total}, paid by {method}.")
    if order.carrier or order.tracking_ids:
        tracking = " and ".join(order.tracking_ids)
        facts.append(f"Your order {oid} ships with {order.carrier}, tracking {tracking}.")
    if order.estimated_delivery is not None:
        facts.append(f"Your order {oid} has estimated delivery {_day(order.estimated_delivery)}.")
    facts.extend(f"Your order {oid} was refunded {cur}{amount}." for amount in order.refunds)
    return facts


def orders_needed(question: str) -> bool:
    return bool(_ORDER_WORDS.search(question) or order_id_find(question))


def order_lines(
    *, service: OrderService, customer_id: str, language: str, limit: int
) -> tuple[list[tuple[str, list[str]]], dict[str, Any]]:
    """The shopper's own orders (newest first, at most ``limit``) and a line on
    refunds: each as (the prompt's line, the facts the reply is checked against)."""
    labels = LABELS.get(language, LABELS["en"])
    if not customer_id:
        return [(labels["anonymous"], [labels["anonymous"]])], {"orders": "anonymous"}
    orders = service.orders_for_customer(customer_id=customer_id)
    if not orders:
        return [(labels["no_orders"], [labels["no_orders"]])], {"orders": 0}
    orders = sorted(orders, key=lambda o: o.placed_on, reverse=True)
    cur = shop_profile().currency_symbol
    lines = [
        (order_line(order, currency=cur), order_facts(order, currency=cur))
        for order in orders[:limit]
    ]
    if not any(order.refunds for order in orders):
        # Said outright, and first (the budget may cut the oldest orders): "why did my
        # refund take so long" must meet a fact, not a gap the model fills with a cause.
        lines.insert(0, (labels["no_refunds"], [labels["no_refunds"]]))
    return lines, {"orders": len(orders), "orders_shown": min(limit, len(orders))}


def _stem(word: str) -> str:
    for suffix in ("es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _head(name: str) -> str:
    """A product's head noun ("Trail Tents" -> "tent"): what a question names it by."""
    words = _WORD.findall(name.lower())
    return _stem(words[-1]) if words else ""


def named_products(question: str) -> list[ProductFacts]:
    """The products the question names (by head noun, singular or plural, or whole
    name), from the shop's catalogue (``shop.catalogue``: imported, synced or edited in
    the admin). English product names only: a Chinese question names no product here."""
    from shop.catalogue import catalogue_products

    asked = {_stem(w) for w in _WORD.findall(question.lower())}
    return [
        product
        for product in catalogue_products(name_words=asked)
        if _head(product.name) in asked
        or " ".join(_WORD.findall(product.name.lower())) in question.lower()
    ]


def _bounded(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: whole sentences when one fits, else
    whole words and an ellipsis, so a long description never fills the context."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("。"))
    if end > 0:
        return cut[: end + 1]
    return cut.rsplit(" ", 1)[0].rstrip(",;:") + "…"


def product_line(product: ProductFacts, *, limit: int = DESCRIPTION_CHARS) -> str:
    """A product as the L3 prompt reads it: its name, category and description (at most
    ``limit`` characters), then each option and the values its variants come in:
    "Dales Gravel Bike (bikes): Aluminium gravel bike ... Frame options: 54 cm, 56 cm."."""
    head = f"{product.name} ({product.category})" if product.category else product.name
    parts = [head + (f": {_bounded(product.description, limit)}" if product.description else "")]
    values: dict[str, list[str]] = {}
    for variant in product.variants:
        for key, value in variant.options.items():
            if value not in values.setdefault(key, []):
                values[key].append(value)
    parts += [f"{key.capitalize()} options: {', '.join(vals)}" for key, vals in values.items()]
    return " ".join(p if p.endswith((".", "…", "。", "!", "?")) else p + "." for p in parts)


def catalogue_rows(
    *, question: str, limit: int, named: list[ProductFacts] | None = None
) -> tuple[list[CatalogueRow], list[str]]:
    """Variants of the products the question names (``named_products``, or ``named``
    when the caller has read them), dearest first (cheapest first if it asks for cheap),
    at most ``limit`` in all."""
    if named is None:
        named = named_products(question)
    if not named:
        return [], []
    cheap_first = bool(_CHEAP_WORDS.search(question))
    per_product = max(2, limit // len(named))
    currency = shop_profile().currency_symbol
    rows: list[CatalogueRow] = []
    for product in named:
        variants = [
            CatalogueRow(
                product=product.name,
                item_id=v.sku,
                options=v.options,
                price=v.price,
                available=v.available,
                currency=currency,
            )
            for v in product.variants
        ]
        variants.sort(key=lambda r: (r.price, r.item_id), reverse=not cheap_first)
        rows.extend(variants[:per_product])
    return rows[:limit], [p.name for p in named]


def kb_passages(*, question: str, language: str) -> tuple[list[Any], dict[str, Any]]:
    """The relevant help-article passages (``knowledge.retrieval``)."""
    from knowledge.retrieval import passages_retrieve

    try:
        result = passages_retrieve(question=question, language=language)
    except Exception as exc:  # an index or embedder fault costs the passages, not the turn
        logger.exception("L3 context: retrieval failed")
        return [], {"kb_error": type(exc).__name__}
    return [p for p in result.passages if p.relevant], {}


def kb_extract(question: str, passages: list[Any]) -> str:
    """The sentences on the question (``passage_extract``) of the relevant passage that
    holds most of its words (``coverage_first``), when it holds what the question asks
    about (L2's coverage check); "" otherwise, so an unrelated article is never quoted
    as the answer."""
    from knowledge.answer import coverage_first, passage_material
    from knowledge.coverage import question_coverage
    from knowledge.grounding import passage_extract

    if not passages:
        return ""
    best = coverage_first(question, passages)[0]
    if not question_coverage(question, [passage_material(best)]).answers:
        return ""
    return passage_extract(question, [best.text], max_chars=settings.TIERDESK_KB_EXTRACT_CHARS)


def l3_adds_records(*, question: str, customer_id: str) -> bool:
    """Whether the large tier would have records for the turn's question beyond the
    help articles L2 searched: the shopper's own orders (a signed-in shopper asking
    about them) or the catalogue rows of a product it names. Blocking (database)."""
    if customer_id and orders_needed(question):
        return True
    rows, _products = catalogue_rows(question=question, limit=1)
    return bool(rows)


def _fits(line: str, used: int, budget: int) -> bool:
    from knowledge.text import estimate_tokens

    return used + estimate_tokens(line) <= budget


def shop_context(
    *, question: str, language: str, customer_id: str, service: OrderService
) -> ShopContext:
    """What the question needs from the shop's records, within the token budget.
    Orders first (only when the question is about them), then catalogue rows, then
    help-article passages; a line that doesn't fit is left out. Blocking."""
    from knowledge.text import estimate_tokens

    lang = language if language in LABELS else "en"
    ctx = ShopContext(language=lang)
    budget = settings.TIERDESK_L3_CONTEXT_TOKENS
    # Orders may take at most half the budget and catalogue rows a third more, so a
    # long order history never crowds out the help articles a policy question needs.
    orders_cap, catalogue_cap = budget // 2, budget // 2 + budget // 3
    used = 0
    if orders_needed(question):
        try:
            lines, explain = order_lines(
                service=service,
                customer_id=customer_id,
                language=lang,
                limit=settings.TIERDESK_L3_ORDER_ROWS,
            )
        except OrderServiceError as exc:
            # The order system is down: no order facts, so none can be claimed.
            logger.warning("L3 context: orders unavailable (%s)", exc.code)
            lines, explain = [], {"orders_error": exc.code}
        ctx.explain |= explain
        ctx.personal = bool(customer_id)
        for line, facts in lines:
            if _fits(line, used, orders_cap):
                ctx.order_lines.append(line)
                ctx.order_facts.extend(facts)
                used += estimate_tokens(line)
    named = named_products(question)
    rows, products = catalogue_rows(
        question=question, limit=settings.TIERDESK_L3_CATALOGUE_ROWS, named=named
    )
    for rank, row in enumerate(rows, start=1):
        line = row.line(rank)
        if _fits(line, used, catalogue_cap):
            ctx.catalogue_lines.append(line)
            ctx.catalogue_rows.append(row)
            used += estimate_tokens(line)
    # Descriptions after the rows: prices and stock first when the budget is short.
    for product in named[: settings.TIERDESK_L3_CATALOGUE_ROWS]:
        line = product_line(product)
        if _fits(line, used, catalogue_cap):
            ctx.product_lines.append(line)
            used += estimate_tokens(line)
    if products:
        ctx.explain["products"] = products
    passages, explain = kb_passages(question=question, language=lang)
    ctx.explain |= explain
    ctx.kb_extract = kb_extract(question, passages)
    for passage in passages:
        text = f"{passage.title}: {' '.join(passage.text.split())}"
        if _fits(text, used, budget):
            ctx.kb_passages.append(text)
            ctx.citations.append(passage.citation())
            used += estimate_tokens(text)
    ctx.explain["context_tokens"] = used
    return ctx

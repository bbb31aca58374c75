"""The demo knowledge base: help articles written for shoppers, in English and Chinese.

- ``seed_data/en/*.md``: help articles written from the ABCD guidelines
  (third_party/abcd/guidelines.json: the pricing, membership, timing and policy FAQs,
  the boots / shirt / jacket / jeans FAQ questions, and the refund, return, shipping,
  subscription, account, purchase-dispute and troubleshooting flows) and from the
  tau-bench retail policy (third_party/tau_bench_retail/wiki.md: cancelling and
  changing pending orders, returns, exchanges and refunds), rephrased for shoppers
  (no agent instructions). Shipping options quote the shop's own data
  (chatbot/orders/seed.py), sizes and materials its catalogue (products.json). Where
  no source states a fact (gift-card expiry, membership thresholds, prices of extra
  services) the demo shop's own rule is written once and kept the same in both
  languages and in the answer evaluation (bench/sets/answers/demo/). Care advice is
  never invented: the articles point to the care label.
- ``seed_data/zh/*.md``: the main policies in Chinese, with the same facts.
- ``seed_data/<language>/synonyms.txt``: the demo shop's words (synonym sets, format in
  ``knowledge.shop_words.parse_lines``), seeded with the articles (``synonyms_seed``).

The orders article's key is ``store-policy``, the key the retrieval evaluation's
labels (bench/sets/rag/demo) name it by.

Idempotent: documents are keyed by ``seed_key``; an existing one is never overwritten
(support admins may have edited it), and one a support admin deleted is not created
again (``DeletedSeedDocument``: ``make run`` seeds on every start). New ones are queued
for ingestion, or ingested right here with ``ingest_now`` (tests, the evaluation, the
benchmark).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from .models import DeletedSeedDocument, Document, SynonymSet

SEED_DIR = Path(__file__).resolve().parent / "seed_data"
ABCD = "third_party/abcd/guidelines.json"
TAU = "third_party/tau_bench_retail/wiki.md"
CATALOGUE = "third_party/tau_bench_retail/products.json"

# (seed key, language, title, file, origin)
ARTICLES: list[tuple[str, str, str, str, str]] = [
    ("en-pricing-faq", "en", "Pricing FAQ", "en/pricing-faq.md", ABCD + " (Pricing FAQ)"),
    (
        "en-membership-faq",
        "en",
        "Membership FAQ",
        "en/membership-faq.md",
        ABCD + " (Membership FAQ)",
    ),
    ("en-timing-faq", "en", "Timing FAQ", "en/timing-faq.md", ABCD + " (Timing FAQ)"),
    ("en-policy-faq", "en", "Policy FAQ", "en/policy-faq.md", ABCD + " (Policy FAQ)"),
    ("en-jeans-faq", "en", "Jeans FAQ", "en/jeans-faq.md", ABCD + " (Jeans FAQ)"),
    ("en-boots-faq", "en", "Boots FAQ", "en/boots-faq.md", ABCD + " (Boots FAQ)"),
    ("en-shirt-faq", "en", "Shirt FAQ", "en/shirt-faq.md", ABCD + " (Shirt FAQ)"),
    ("en-jacket-faq", "en", "Jacket FAQ", "en/jacket-faq.md", ABCD + " (Jacket FAQ)"),
    (
        "en-returns",
        "en",
        "Returns and exchanges by membership level",
        "en/returns-by-membership.md",
        ABCD + " (Product Defect: returns); " + TAU + " (return, exchange)",
    ),
    (
        "en-refunds",
        "en",
        "Refunds: methods, timing and status",
        "en/refunds.md",
        ABCD + " (refunds); " + TAU + " (refunds)",
    ),
    (
        "en-shipping",
        "en",
        "Shipping options and delivery times",
        "en/shipping-and-delivery.md",
        ABCD + " (Shipping Issue, Order Issue); chatbot/orders/seed.py (shipping options)",
    ),
    (
        "en-subscription",
        "en",
        "Premium subscription billing",
        "en/premium-subscription.md",
        ABCD + " (Subscription Inquiry)",
    ),
    (
        "en-account-access",
        "en",
        "Username, password and two-factor authentication",
        "en/account-access.md",
        ABCD + " (Account Access)",
    ),
    (
        "en-troubleshooting",
        "en",
        "Website and checkout troubleshooting",
        "en/website-troubleshooting.md",
        ABCD + " (Troubleshoot Site)",
    ),
    (
        "en-promo-prices",
        "en",
        "Promo codes, price changes and out-of-stock items",
        "en/promo-codes-and-prices.md",
        ABCD + " (Purchase Dispute)",
    ),
    (
        "en-account-profile",
        "en",
        "Changing your account details",
        "en/account-profile.md",
        ABCD + " (Manage Account)",
    ),
    ("en-care", "en", "Caring for your clothes and shoes", "en/care.md", CATALOGUE),
    ("en-gift-cards", "en", "Gift cards", "en/gift-cards.md", TAU + " (gift cards); Tierdesk demo"),
    ("en-sizes", "en", "Sizes", "en/sizes.md", CATALOGUE),
    ("zh-returns", "zh", "退换货政策", "zh/returns.md", "Tierdesk demo"),
    ("zh-membership", "zh", "会员等级与权益", "zh/membership.md", "Tierdesk demo"),
    ("zh-shipping", "zh", "运费与配送时间", "zh/shipping.md", "Tierdesk demo"),
    (
        "zh-care-jeans-shirts",
        "zh",
        "牛仔裤、衬衫和T恤：洗涤与选项",
        "zh/care-jeans-shirts.md",
        "Tierdesk demo",
    ),
    (
        "zh-care-jackets-boots",
        "zh",
        "夹克和靴子的保养",
        "zh/care-jackets-boots.md",
        "Tierdesk demo",
    ),
    ("zh-sizes-stock", "zh", "尺码与库存", "zh/sizes-stock.md", "Tierdesk demo"),
    ("zh-refunds-payment", "zh", "退款方式与到账时间", "zh/refunds-payment.md", "Tierdesk demo"),
    ("zh-account-security", "zh", "账户安全与密码", "zh/account-security.md", "Tierdesk demo"),
    ("zh-gift-cards", "zh", "礼品卡", "zh/gift-cards.md", "Tierdesk demo"),
    ("zh-orders", "zh", "取消和修改订单", "zh/orders.md", "Tierdesk demo"),
]
# Written for shoppers from tau-bench's retail agent policy (wiki.md, MIT).
STORE_POLICY = (
    "store-policy",
    "en",
    "Cancelling or changing an order",
    "en/orders.md",
    "sierra-research/tau-bench @ 59a200c6, tau_bench/envs/retail/wiki.md (MIT), rephrased",
)


def knowledge_keys() -> list[str]:
    """The demo knowledge base's article keys, store policy last."""
    return [key for key, *_ in [*ARTICLES, STORE_POLICY]]


def article_path(relative: str) -> Path:
    if relative.startswith("third_party/"):
        return Path(settings.BASE_DIR) / relative
    return SEED_DIR / relative


def knowledge_seed(*, ingest_now: bool = False, keys: list[str] | None = None) -> dict[str, int]:
    """Create the missing demo documents (all, or those in ``keys``); with
    ``ingest_now`` also ingest every document that is not ready, in this process.

    Without ``keys``, a demo article a support admin deleted stays deleted. Naming it in
    ``keys`` is asking for it: it is created again and no longer marked deleted."""
    from . import services

    synonyms_seed()
    created = 0
    deleted = set(DeletedSeedDocument.objects.values_list("seed_key", flat=True))
    for key, language, title, relative, origin in [*ARTICLES, STORE_POLICY]:
        if keys is not None and key not in keys:
            continue
        if keys is None and key in deleted:
            continue
        if Document.objects.filter(seed_key=key).exists():
            continue
        if key in deleted:
            DeletedSeedDocument.objects.filter(seed_key=key).delete()
        path = article_path(relative)
        services.document_create(
            title=title,
            language=language,
            text=path.read_text(encoding="utf-8"),
            source_format=Document.Format.MARKDOWN,
            origin=origin,
            seed_key=key,
        )
        created += 1
    ingested = 0
    if ingest_now:
        # Not ready, or ready from before the multilingual embedder (its vectors are
        # added: the content is the same, so every card keeps its review).
        pending = list(
            Document.objects.exclude(status=Document.Status.READY).values_list("pk", flat=True)
        )
        from .section_questions import section_questions_sync

        for document_id in [*pending, *services.documents_missing_multilingual()]:
            outcome = services.document_ingest(document_id=document_id)
            ingested += outcome.result == "ready"
            if outcome.result == "ready":
                section_questions_sync(document_id=document_id)
    return {
        "created": created,
        "ingested": ingested,
        "documents": Document.objects.count(),
        "kept_deleted": 0 if keys is not None else len(deleted),
    }


def synonyms_seed() -> int:
    """Create the demo shop's synonym sets that are missing (keyed by language, kind and
    first term); one a support admin edited or disabled is left as it is. Returns how
    many were created."""
    from . import services, shop_words

    present = set(SynonymSet.objects.exclude(seed_key=None).values_list("seed_key", flat=True))
    deleted = set(
        DeletedSeedDocument.objects.filter(seed_key__startswith="synonyms:").values_list(
            "seed_key", flat=True
        )
    )
    rows = []
    for word_set in shop_words.seed_sets():
        key = f"{word_set.language}:{word_set.kind}:{word_set.terms[0]}"
        if key in present or services.synonym_seed_key(key) in deleted:
            continue
        present.add(key)
        rows.append(
            SynonymSet(
                language=word_set.language,
                kind=word_set.kind,
                terms=", ".join(word_set.terms),
                target=", ".join(word_set.target),
                seed_key=key,
            )
        )
    if rows:
        SynonymSet.objects.bulk_create(rows)
        services.shop_words_changed()
    return len(rows)

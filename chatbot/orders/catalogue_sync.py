"""Pull the shop's catalogue from its HTTP API (docs/order-api.md, Catalogue) into the
catalogue tables (shop/catalogue_import.py).

The whole catalogue is read first and validated like an uploaded file; any error, or
any failure of the shop's API, changes nothing, and the previous catalogue stays in
use. A clean read replaces the catalogue: products and variants the shop no longer
lists are removed. Run by ``manage.py catalogue_sync`` and the Celery task
``orders.catalogue_sync`` (every ``TIERDESK_CATALOGUE_SYNC_S`` when set). Blocking.
"""

from __future__ import annotations

import logging

from django.conf import settings

from shop.catalogue_import import ImportResult, catalogue_import_json

from .backends import HttpOrderService, get_order_service
from .types import OrderServiceError

logger = logging.getLogger(__name__)

# A safety stop for a server whose pages never end (100 products a page: 100 000).
MAX_PAGES = 1000


class CatalogueSyncError(Exception):
    """The shop's catalogue could not be read (the message says why)."""


def catalogue_sync(*, client: HttpOrderService | None = None) -> ImportResult:
    """Read every page and import them as one file, with ``prune``. Raises
    CatalogueSyncError when the order backend is not HTTP or the API fails; a
    catalogue with bad rows comes back as the result's errors, nothing imported."""
    if client is None:
        service = get_order_service()
        if not isinstance(service, HttpOrderService):
            raise CatalogueSyncError(
                f"The catalogue sync reads the shop's HTTP API; the order backend is "
                f"{settings.TIERDESK_ORDER_BACKEND!r}. Set TIERDESK_ORDER_BACKEND=http, or "
                "import a file (manage.py import_catalogue)."
            )
        client = service
    products: list[object] = []
    try:
        for page in client.catalogue_pages(max_pages=MAX_PAGES):
            products.extend(page)
    except OrderServiceError as exc:
        raise CatalogueSyncError(f"{exc} Nothing was changed.") from exc
    result = catalogue_import_json({"products": products}, prune=True)
    if result.ok:
        logger.info("catalogue sync: %s", result.counts())
    else:
        logger.error(
            "catalogue sync: the shop's catalogue has %d error(s), nothing changed; first: %s",
            len(result.errors),
            result.errors[0],
        )
    return result

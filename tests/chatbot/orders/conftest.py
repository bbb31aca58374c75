"""Fixtures for the order system: real demo data seeded into the test database.

Most tests seed a slice of the tau-bench data (the customers named below, everyone
sharing their zips, and their orders): the same records as the full demo shop, in
a few milliseconds instead of a second per test. test_seed.py seeds all of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatbot.orders.backends import DjangoOrderService
from chatbot.orders.seed import default_data_dir, shop_seed

# Facts of the tau-bench demo data (third_party/tau_bench_retail/) the tests rely on.
MOHAMED = "mohamed_li_1979"  # zip 43209, mohamed.li8414@example.com, pays with PayPal
MOHAMED_PENDING = "#W8844578"
MOHAMED_PROCESSED = "#W7824724"
MOHAMED_DELIVERED = "#W8864622"
MOHAMED_CANCELLED = "#W2437730"
JAMES = "james_li_5688"  # zip 10083, james.li4495@example.com, the only customer there
JAMES_PROCESSED = "#W2611340"  # Water Bottle 47.84 + Office Chair 488.81, gift card
JAMES_EMAIL = "james.li4495@example.com"
ETHAN = "ethan_lopez_6291"
ETHAN_PENDING_GIFT_CARD = "#W6779827"
# Zip 94102 has Juan Martin, Daiki Silva and Daiki Davis: a first name alone is ambiguous.
DAIKI_SILVA = "daiki_silva_2903"
SHARED_ZIP = "94102"

_SLICE_CUSTOMERS = {MOHAMED, JAMES, ETHAN, DAIKI_SILVA}


@pytest.fixture(scope="session")
def shop_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = default_data_dir()
    users = json.loads((source / "users.json").read_text())
    orders = json.loads((source / "orders.json").read_text())
    zips = {users[c]["address"]["zip"] for c in _SLICE_CUSTOMERS}
    users = {cid: u for cid, u in users.items() if u["address"]["zip"] in zips}
    orders = {oid: o for oid, o in orders.items() if o["user_id"] in users}
    target = tmp_path_factory.mktemp("tau_bench_slice")
    (target / "users.json").write_text(json.dumps(users))
    (target / "orders.json").write_text(json.dumps(orders))
    products = json.loads((source / "products.json").read_text())
    wanted = {item["product_id"] for o in orders.values() for item in o["items"]}
    products = {pid: p for pid, p in products.items() if pid in wanted}
    (target / "products.json").write_text(json.dumps(products))
    return target


@pytest.fixture
def shop(db: None, shop_data_dir: Path) -> DjangoOrderService:
    shop_seed(data_dir=shop_data_dir)
    return DjangoOrderService()

"""House rule: the demo shop's own values live in its seed data only.

No file of the apps (code, templates, scripts) outside the demo-shop seed files names
the demo's order-id form (``#W`` and seven digits), quotes its store-policy values
(the 30-day window, "unworn with tags attached", refunds in "5 to 7 business days",
the "prepaid shipping label") or names its products (the catalogue
of third_party/tau_bench_retail/products.json, as written there: "Water Bottle"): a
shop's values come from its shop profile (shop/profile.py) and its catalogue
(shop/catalogue.py), and a reply, prompt or example that quoted the demo's would be
wrong for it.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from tests.test_house import APPS, ROOT

DEMO_VALUES = re.compile(
    r"#?\bW\d{7}\b"  # the demo's order ids
    r"|unworn with|tags? attached|吊牌完整|未穿着"  # its apparel condition
    r"|\b30[- ]day (?:return )?window|\b30 days (?:from|of) purchase|购买后30天"
    r"|(?-i:RETURN_WINDOW_DAYS)\s*=\s*\d"
    r"|\b5 to 7 business days|5到7个工作日"  # its refund timing
    r"|prepaid (?:shipping |return )?label|预付运单",  # who pays return postage
    re.IGNORECASE,
)
DEMO_PRODUCTS_FILE = ROOT / "third_party" / "tau_bench_retail" / "products.json"


@cache
def demo_products() -> re.Pattern[str]:
    """The demo catalogue's product names as they are written (case-sensitive: "a
    notebook" in a comment is a word, "Notebook" the demo's product)."""
    products = json.loads(DEMO_PRODUCTS_FILE.read_text(encoding="utf-8"))
    names = sorted({p["name"] for p in products.values()}, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])")


SUFFIXES = {".py", ".html", ".js", ".json", ".md", ".txt", ".yml"}
# The demo shop's seed files, where its values belong, and why any other file is here.
ALLOWED = {
    "chatbot/orders/seed.py": "loads the demo shop's orders; names its late orders",
    "routing/models.py": "a field's help text; rewording it needs a migration",
    "shop/models.py": "a field's help text names two products; rewording it needs a migration",
}
ALLOWED_DIRS = ("seed_data",)
# Seed files every shop gets (setup_shop), not the demo's: held to the rule too.
SHIPPED_TO_EVERY_SHOP = ("routing/seed_data/templates.json",)


def _files() -> list[Path]:
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*")):
            parts = path.relative_to(ROOT).parts
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            if {"migrations", "node_modules", "__pycache__"} & set(parts):
                continue
            shipped = path.relative_to(ROOT).as_posix() in SHIPPED_TO_EVERY_SHOP
            if set(ALLOWED_DIRS) & set(parts) and not shipped:
                continue
            found.append(path)
    return found


def test_no_app_file_names_the_demo_shops_values() -> None:
    offenders = []
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for rule in (DEMO_VALUES, demo_products()):
                if match := rule.search(line):
                    offenders.append(f"{rel}:{number}: {match.group(0)!r}")
    assert not offenders, (
        "the demo shop's values outside its seed data (read them from the shop profile, "
        "shop/profile.py):\n" + "\n".join(offenders)
    )


def test_the_rule_catches_what_it_is_for() -> None:
    for text in (
        "order #W2611340",
        "W1234567",
        "items must be unworn with their tags attached",
        "RETURN_WINDOW_DAYS = 30",
        "within the 30-day window",
        "请在购买后30天内申请",
        "refunds take 5 to 7 business days",
        "退款5到7个工作日到账",
        "We email you a prepaid shipping label",
        "with the prepaid label",
        "我们会通过邮件发送预付运单",
    ):
        assert DEMO_VALUES.search(text), text
    for text in (
        "#1001",
        "SO-12345",
        "#W{7}",
        "unworn items are worn's opposite",
        "30 days ago",
        "within 3 to 5 working days",
        "15 to 7 business days",
    ):
        assert not DEMO_VALUES.search(text), text
    products = demo_products()
    for text in ("a Water Bottle", "the T-Shirt (blue)", "Hiking Boots,"):
        assert products.search(text), text
    for text in ("a water bottle", "Trail Tent", "a notebook", "Water Bottles-Rack"):
        assert not products.search(text), text


def test_the_seed_every_shop_gets_is_scanned() -> None:
    scanned = {path.relative_to(ROOT).as_posix() for path in _files()}
    assert set(SHIPPED_TO_EVERY_SHOP) <= scanned
    assert "shop/seed_data/demo_profile.json" not in scanned


def test_allowed_files_still_exist_and_need_it() -> None:
    for rel in ALLOWED:
        path = ROOT / rel
        assert path.is_file(), rel
        text = path.read_text(encoding="utf-8")
        assert DEMO_VALUES.search(text) or demo_products().search(text), f"{rel} no longer needs it"

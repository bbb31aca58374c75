"""House rule for issue #34: the demo shop's own values live in its seed data only.

No file of the apps (code, templates, scripts) outside the demo-shop seed files names
the demo's order-id form (``#W`` and seven digits) or quotes its store-policy values
(the 30-day window, "unworn with tags attached"): a shop's values come from its shop
profile (shop/profile.py), and a reply that quoted the demo's would be wrong for it.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_house import APPS, ROOT

DEMO_VALUES = re.compile(
    r"#?\bW\d{7}\b"  # the demo's order ids
    r"|unworn with|tags? attached|吊牌完整|未穿着"  # its apparel condition
    r"|\b30[- ]day (?:return )?window|\b30 days (?:from|of) purchase|购买后30天"
    r"|(?-i:RETURN_WINDOW_DAYS)\s*=\s*\d",
    re.IGNORECASE,
)
SUFFIXES = {".py", ".html", ".js", ".json", ".md", ".txt", ".yml"}
# The demo shop's seed files, where its values belong, and why any other file is here.
ALLOWED = {
    "chatbot/orders/seed.py": "loads the demo shop's orders; names its late orders",
    "routing/models.py": "a field's help text; rewording it needs a migration",
}
ALLOWED_DIRS = ("seed_data",)


def _files() -> list[Path]:
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*")):
            parts = path.relative_to(ROOT).parts
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            if {"migrations", "node_modules", "__pycache__"} & set(parts):
                continue
            if set(ALLOWED_DIRS) & set(parts):
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
            if match := DEMO_VALUES.search(line):
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
    ):
        assert DEMO_VALUES.search(text), text
    for text in ("#1001", "SO-12345", "#W{7}", "unworn items are worn's opposite", "30 days ago"):
        assert not DEMO_VALUES.search(text), text


def test_allowed_files_still_exist_and_need_it() -> None:
    for rel in ALLOWED:
        path = ROOT / rel
        assert path.is_file(), rel
        assert DEMO_VALUES.search(path.read_text(encoding="utf-8")), f"{rel} no longer needs it"

"""The catalogue in Chromium: a support admin uploads a CSV in the admin, sees each
error of a bad file by line and field (nothing imported), then imports a good one; the
widget's L3 answer about the new product quotes it in the shop's currency (pounds
here, set in the shop profile). Writes docs/admin-catalogue-import.png when
TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .live import REPO, LiveServer, _manage, server_env

pytestmark = [pytest.mark.browser, pytest.mark.models]

SCRIPT = Path(__file__).with_name("catalogue_e2e.mjs")
NODE_TIMEOUT_S = 600
SUPPORT_ADMIN = (
    "from django.contrib.auth import get_user_model; from django.contrib.auth.models import Group;"
    "U = get_user_model();"
    "u = U.objects.filter(username='cat_admin').first() or U.objects.create_user("
    "'cat_admin', password='cat_admin', is_staff=True);"
    "u.groups.add(Group.objects.get(name='support admins'))"
)
POUNDS = (
    "from shop.models import ShopProfile; p = ShopProfile.objects.get();"
    "p.currency_code, p.currency_symbol = 'GBP', '£'; p.save()"
)
# The server is shared with the other browser tests: dollars again, and no tents.
RESTORE = (
    "from shop.models import ShopProfile, Product; p = ShopProfile.objects.get();"
    "p.currency_code, p.currency_symbol = 'USD', '$'; p.save();"
    "Product.objects.filter(product_id='TENT-2P').delete()"
)
HEADER = "sku,product_id,name,category,price,currency,options,available,description\n"
GOOD = (
    HEADER + "TENT-2P-GRN,TENT-2P,Trail Tent,camping,249.00,GBP,color=green; size=2 person,"
    'true,"Light, two-person tent"\n'
    "TENT-2P-ORG,TENT-2P,Trail Tent,camping,239.50,GBP,color=orange; size=2 person,"
    'true,"Light, two-person tent"\n'
)
BAD = (
    HEADER + "TENT-2P-GRN,TENT-2P,Trail Tent,camping,249.00,GBP,color=green,true,\n"
    "TENT-2P-ORG,TENT-2P,Trail Tent,camping,£239.50,USD,color orange,maybe,\n"
    ",TENT-2P,Trail Tent,camping,10,,,,\n"
)
QUESTION = (
    "Compare the green and the orange Trail Tent: which is better for a rainy weekend, "
    "and how much does each cost?"
)


def test_admin_imports_a_catalogue_and_l3_quotes_it_in_the_shops_currency(
    browser_tools: str, daphne_server: LiveServer, tmp_path: Path
) -> None:
    env = server_env(daphne_server.database_url)
    _manage(env, daphne_server.log, "shell", "-c", SUPPORT_ADMIN)
    _manage(env, daphne_server.log, "shell", "-c", POUNDS)
    bad, good = tmp_path / "tents-bad.csv", tmp_path / "tents.csv"
    bad.write_text(BAD, encoding="utf-8")
    good.write_text(GOOD, encoding="utf-8")
    shot = (
        REPO / "docs" / "admin-catalogue-import.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "admin-catalogue-import.png"
    )
    cmd = [
        *(browser_tools, str(SCRIPT), "--base", daphne_server.url),
        *("--user", "cat_admin", "--password", "cat_admin"),
        *("--bad", str(bad), "--good", str(good), "--question", QUESTION),
        *("--screenshot", str(shot)),
    ]
    try:
        proc = subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
        )
    finally:
        _manage(env, daphne_server.log, "shell", "-c", RESTORE)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        pytest.fail(
            f"catalogue scenario failed: {result.get('error') or proc.stdout[-2000:]}\n"
            f"steps: {result.get('steps')}\nstderr: {proc.stderr[-2000:]}\n"
            f"server log:\n{daphne_server.log.read_text(errors='replace')[-3000:]}"
        )
    assert "tents-bad.csv: 5 errors. Nothing was imported" in result["bad_summary"]
    rows = {(where, field): problem for where, field, problem in result["bad_rows"]}
    assert set(rows) == {
        ("line 3", "price"),
        ("line 3", "currency"),
        ("line 3", "options"),
        ("line 3", "available"),
        ("line 4", "sku"),
    }, rows
    assert "USD is not the shop's currency GBP" in rows[("line 3", "currency")]
    assert "products created 1, variants created 2" in result["imported"]
    assert "£239.50 – £249.00" in result["listed"]
    (reply,) = result["replies"]
    print(f"\nL3 answer: {reply}")
    assert reply["tier"] == "L3" and not reply["errors"], reply
    assert "Trail Tent" in reply["text"] or "tent" in reply["text"].lower(), reply
    assert "£" in reply["text"] and "$" not in reply["text"], reply
    assert not result["errors"], result["errors"]
    assert shot.stat().st_size > 10_000

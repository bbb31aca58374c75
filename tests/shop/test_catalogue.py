"""The catalogue: CSV/JSON import (all or nothing, errors by line and field, idempotent
by SKU), manage.py import_catalogue, the admin's upload page and edit form, the demo
seed, and L3's catalogue rows read from it in the shop's currency."""

from __future__ import annotations

import json
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from chatbot.answerers.l3_records import catalogue_rows
from chatbot.orders.seed import catalogue_seed
from shop.catalogue import catalogue_products
from shop.catalogue_import import catalogue_import_file
from shop.models import Product, ProductVariant, ShopProfile
from shop.values import demo_profile_values

pytestmark = pytest.mark.django_db

GOOD_CSV = (
    "sku,product_id,name,category,price,currency,options,available,description\n"
    "TENT-2P-GRN,TENT-2P,Trail Tent,camping,249.00,USD,color=green; size=2 person,true,"
    '"Light, two-person tent"\n'
    "TENT-2P-ORG,TENT-2P,Trail Tent,camping,239.50,,color=orange; size=2 person,sold out,"
    '"Light, two-person tent"\n'
    "MUG-1,,Camp Mug,camping,12,,,,\n"
)

BAD_CSV = (
    "sku,product_id,name,category,price,currency,options,available,description\n"
    "TENT-2P-GRN,TENT-2P,Trail Tent,camping,249.00,USD,color=green,true,\n"  # fine
    "TENT-2P-ORG,TENT-2P,Trail Tents,camping,12.5x,EUR,color orange,maybe,\n"  # line 3
    ",,Camp Mug,camping,-3,,,,\n"  # line 4
    "TENT-2P-GRN,,Other,,1.999,,,,\n"  # line 5
)


def _errors(data: str | bytes, filename: str) -> list[tuple[str, str]]:
    raw = data.encode() if isinstance(data, str) else data
    result = catalogue_import_file(raw, filename=filename)
    return [(e.where, e.field) for e in result.errors]


def test_a_csv_goes_in_and_the_same_file_again_changes_nothing() -> None:
    first = catalogue_import_file(GOOD_CSV.encode(), filename="tents.csv")
    assert first.ok and first.products_created == 2 and first.variants_created == 3
    tent = Product.objects.get(product_id="TENT-2P")
    assert (tent.name, tent.category, tent.description) == (
        "Trail Tent",
        "camping",
        "Light, two-person tent",
    )
    orange = ProductVariant.objects.get(sku="TENT-2P-ORG")
    assert orange.options == {"color": "orange", "size": "2 person"}
    assert orange.price == Decimal("239.50") and orange.available is False
    # No product_id: the SKU is the product's id (a product of one variant).
    assert ProductVariant.objects.get(sku="MUG-1").product.product_id == "MUG-1"

    again = catalogue_import_file(GOOD_CSV.encode(), filename="tents.csv")
    assert again.ok and again.unchanged == 3
    assert again.counts() | {"unchanged": 0} == dict.fromkeys(again.counts(), 0)

    cheaper = GOOD_CSV.replace("239.50", "199.00")
    changed = catalogue_import_file(cheaper.encode(), filename="tents.csv")
    assert changed.variants_updated == 1 and changed.unchanged == 2
    assert ProductVariant.objects.get(sku="TENT-2P-ORG").price == Decimal("199.00")
    assert ProductVariant.objects.count() == 3


def test_a_bad_csv_lists_every_error_by_line_and_field_and_imports_nothing() -> None:
    result = catalogue_import_file(BAD_CSV.encode(), filename="bad.csv")
    found = {(e.where, e.field): e.message for e in result.errors}
    assert set(found) == {
        ("line 3", "name"),  # differs from line 2's name for TENT-2P
        ("line 3", "price"),
        ("line 3", "currency"),
        ("line 3", "options"),
        ("line 3", "available"),
        ("line 4", "sku"),
        ("line 4", "price"),
        ("line 5", "price"),
    }
    assert "'Trail Tents' differs from 'Trail Tent'" in found[("line 3", "name")]
    assert "line 2" in found[("line 3", "name")]
    assert "EUR is not the shop's currency USD" in found[("line 3", "currency")]
    assert "more than two decimal places" in found[("line 5", "price")]
    # Line 2 was fine, and still nothing went in.
    assert not Product.objects.exists() and not ProductVariant.objects.exists()

    dup = "sku,name,price\nA-1,Mug,3\nA-1,Mug,3\n"
    assert _errors(dup, "dup.csv") == [("line 3", "sku")]
    assert catalogue_import_file(dup.encode(), filename="d.csv").errors[0].message == (
        "A-1 is given twice (first at line 2)"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("sku,name,prise\nA,Mug,3\n", [("line 1", "header"), ("line 1", "header")]),
        ("", [("line 1", "header")]),
        (b"sku,name,price\nA,Caf\xe9,3\n", [("the file", "encoding")]),
        ('sku,name,price\nA,"Mug, blue",3,extra\n', [("line 2", "row")]),
        ("sku,name,price\nhas space,Mug,3\n", [("line 2", "sku")]),
    ],
)
def test_a_csv_of_the_wrong_shape_says_where(
    data: str | bytes, expected: list[tuple[str, str]]
) -> None:
    assert _errors(data, "x.csv") == expected


def test_json_uses_the_api_shape_and_errors_name_the_path() -> None:
    good = {
        "products": [
            {
                "product_id": "LAMP",
                "name": "Camp Lamp",
                "category": "camping",
                "variants": [
                    {"sku": "LAMP-1", "price": "30.00", "options": {"color": "red"}},
                    {"sku": "LAMP-2", "price": 28, "available": False},
                ],
            }
        ]
    }
    result = catalogue_import_file(json.dumps(good).encode(), filename="c.json")
    assert result.ok and result.variants_created == 2
    assert ProductVariant.objects.get(sku="LAMP-2").price == Decimal("28.00")

    bad = {
        "products": [
            {"product_id": "LAMP", "name": "Camp Lamp", "variants": []},
            {
                "product_id": "X",
                "name": "",
                "variants": [{"sku": "X-1", "price": "1", "options": ["red"]}],
            },
        ]
    }
    assert _errors(json.dumps(bad), "c.json") == [
        ("products[0]", "variants"),
        ("products[1]", "name"),
        ("products[1].variants[0]", "options"),
    ]
    assert _errors("{not json", "c.json") == [("the file", "JSON")]
    assert _errors("x", "c.xlsx") == [("the file", "name")]
    assert ProductVariant.objects.count() == 2  # the bad files changed nothing


def test_prune_removes_what_the_file_no_longer_lists() -> None:
    catalogue_import_file(GOOD_CSV.encode(), filename="a.csv")
    only_mug = "sku,name,price\nMUG-1,Camp Mug,12\n"
    kept = catalogue_import_file(only_mug.encode(), filename="b.csv")
    assert kept.ok and ProductVariant.objects.count() == 3  # without prune: left alone
    pruned = catalogue_import_file(only_mug.encode(), filename="b.csv", prune=True)
    assert (pruned.variants_removed, pruned.products_removed) == (2, 1)
    assert list(ProductVariant.objects.values_list("sku", flat=True)) == ["MUG-1"]


def test_import_catalogue_command(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text(GOOD_CSV)
    bad.write_text(BAD_CSV)
    err = StringIO()
    with pytest.raises(CommandError, match=r"8 error\(s\): nothing was imported"):
        call_command("import_catalogue", str(bad), stderr=err)
    assert "bad.csv: line 3, price: '12.5x' is not a number" in err.getvalue()
    assert not Product.objects.exists()
    out = StringIO()
    call_command("import_catalogue", str(good), stdout=out)
    assert "'variants_created': 3" in out.getvalue()
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_catalogue", str(tmp_path / "missing.csv"))


def test_demo_products_are_seeded_once_with_the_profiles_categories() -> None:
    assert catalogue_seed() == {"products_created": 50, "variants": 591}
    boots = Product.objects.get(name="Hiking Boots")
    assert boots.category == "apparel" and boots.variants.count() > 1
    assert Product.objects.get(name="Backpack").category == ""
    ProductVariant.objects.filter(product=boots).update(price=Decimal("1.00"))
    assert catalogue_seed() == {"products_created": 0}  # an edit is never undone
    assert set(boots.variants.values_list("price", flat=True)) == {Decimal("1.00")}


# -- the admin ---------------------------------------------------------------------------


@pytest.fixture
def support_admin(client: Client) -> Client:
    user = get_user_model().objects.create_user("cat_admin", password="x", is_staff=True)
    user.groups.add(Group.objects.get(name="support admins"))
    client.force_login(user)
    return client


def test_admin_upload_shows_each_error_then_imports_a_good_file(support_admin: Client) -> None:
    url = "/admin/shop/product/import/"
    page = support_admin.get("/admin/shop/product/")
    assert page.status_code == 200 and url in page.content.decode()

    bad = support_admin.post(url, {"file": SimpleUploadedFile("bad.csv", BAD_CSV.encode())})
    html = bad.content.decode()
    assert bad.status_code == 200
    assert "bad.csv: 8 errors. Nothing was imported" in html
    assert "<td>line 4</td><td><code>sku</code></td><td>is required</td>" in html
    assert not Product.objects.exists()
    # A support admin reading the admin in Chinese gets the errors in Chinese.
    zh = support_admin.post(
        url,
        {"file": SimpleUploadedFile("bad.csv", BAD_CSV.encode())},
        headers={"accept-language": "zh-hans"},
    ).content.decode()
    assert "<td>第 4 行</td><td><code>sku</code></td><td>必填</td>" in zh
    assert "EUR 不是店铺货币 USD" in zh

    good = support_admin.post(url, {"file": SimpleUploadedFile("t.csv", GOOD_CSV.encode())})
    assert good.status_code == 302 and good["Location"] == "/admin/shop/product/"
    listing = support_admin.get(good["Location"]).content.decode()
    assert "Imported t.csv: products created 2, variants created 3." in listing
    assert "$239.50 – $249.00" in listing  # the price column in the shop's currency

    wrong = support_admin.post(url, {"file": SimpleUploadedFile("t.txt", b"x")})
    assert "Upload a .csv or .json file." in wrong.content.decode()


def test_admin_edits_a_variant_and_l3_reads_the_edit(support_admin: Client) -> None:
    catalogue_import_file(GOOD_CSV.encode(), filename="t.csv")
    tent = Product.objects.get(product_id="TENT-2P")
    variants = list(tent.variants.order_by("sku"))
    form: dict[str, Any] = {
        "product_id": tent.product_id,
        "name": tent.name,
        "category": tent.category,
        "description": tent.description,
        "variants-TOTAL_FORMS": str(len(variants)),
        "variants-INITIAL_FORMS": str(len(variants)),
        "variants-MIN_NUM_FORMS": "0",
        "variants-MAX_NUM_FORMS": "1000",
    }
    for i, v in enumerate(variants):
        form |= {
            f"variants-{i}-id": str(v.pk),
            f"variants-{i}-product": str(tent.pk),
            f"variants-{i}-sku": v.sku,
            f"variants-{i}-options": json.dumps(v.options),
            f"variants-{i}-price": "179.00" if v.sku == "TENT-2P-GRN" else str(v.price),
        }
        if v.available:
            form[f"variants-{i}-available"] = "on"
    url = f"/admin/shop/product/{tent.pk}/change/"
    # Options that are not a flat object are refused on their field.
    broken = form | {"variants-0-options": '["green"]'}
    assert "must be an object of option names" in support_admin.post(url, broken).content.decode()
    saved = support_admin.post(url, form)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    rows, named = catalogue_rows(question="how much is the trail tent?", limit=5)
    assert named == ["Trail Tent"]
    assert [(r.item_id, r.price) for r in rows][:1] == [("TENT-2P-ORG", Decimal("239.50"))]
    assert ("TENT-2P-GRN", Decimal("179.00")) in [(r.item_id, r.price) for r in rows]


def test_l3_rows_print_the_shops_currency() -> None:
    ShopProfile(**(demo_profile_values() | {"currency_code": "GBP", "currency_symbol": "£"})).save()
    gbp = GOOD_CSV.replace(",USD,", ",GBP,")
    assert catalogue_import_file(gbp.encode(), filename="t.csv").ok
    rows, _ = catalogue_rows(question="do you sell a tent?", limit=5)
    # Options in jsonb's order (shorter names first), as the order system's items are.
    assert rows[0].line(1) == (
        "1. Trail Tent, item TENT-2P-GRN, size 2 person, color green, price £249.00, available."
    )
    assert rows[1].short() == "Trail Tent (2 person, orange) at £239.50, sold out."
    assert [p.name for p in catalogue_products()] == ["Camp Mug", "Trail Tent"]
    # A USD file no longer fits this shop.
    assert _errors(GOOD_CSV, "t.csv") == [("line 2", "currency")]


def test_l3_reads_only_the_products_a_question_may_name() -> None:
    catalogue_import_file(GOOD_CSV.encode(), filename="t.csv")
    catalogue_import_file(b"sku,name,price\nTV-1,TV,399\n", filename="tv.csv")
    assert [p.name for p in catalogue_products(name_words={"tent", "the"})] == ["Trail Tent"]
    assert catalogue_products(name_words={"a"}) == []
    rows, named = catalogue_rows(question="is the TV in stock?", limit=5)
    assert named == ["TV"] and rows[0].price == Decimal("399.00")
    rows, named = catalogue_rows(question="do you sell mugs and tents?", limit=5)
    assert sorted(named) == ["Camp Mug", "Trail Tent"] and len(rows) == 3


def test_the_return_policy_takes_a_products_category_from_the_catalogue() -> None:
    from chatbot.orders.policy import return_conditions, return_window_days

    values = demo_profile_values()
    values["category_return_window_days"] = {"final sale": 0}
    values["return_conditions"] = values["return_conditions"] | {
        "final sale": {"en": "final sale items cannot be returned", "zh": "清仓商品不可退货"}
    }
    ShopProfile(**values).save()
    csv = "sku,name,category,price\nSCARF-1,Clearance Scarf,Final Sale,9\nMUG-1,Camp Mug,,12\n"
    assert catalogue_import_file(csv.encode(), filename="c.csv").ok
    # Not named in the profile's lists: the catalogue's category (any case) decides.
    assert return_window_days(["Clearance Scarf"]) == 0
    assert return_conditions(["clearance scarf"], "en") == "final sale items cannot be returned"
    # No category, or not in the catalogue: the default window; the profile's list wins.
    assert return_window_days(["Camp Mug"]) == return_window_days(["Unknown"]) == 30
    assert "unworn" in return_conditions(["Hiking Boots"], "en")


def test_l3_context_carries_the_products_description_and_options() -> None:
    from chatbot.answerers.l3_records import DESCRIPTION_CHARS, shop_context
    from chatbot.orders.backends import DjangoOrderService

    long_tail = " ".join(f"Detail number {i} of the tent." for i in range(60))
    catalogue_import_file(GOOD_CSV.encode(), filename="t.csv")
    Product.objects.filter(name="Trail Tent").update(
        description="Light, two-person tent; 1.9 kg packed. " + long_tail
    )
    ctx = shop_context(
        question="is the trail tent good for wind?",
        language="en",
        customer_id="",
        service=DjangoOrderService(),
    )
    [line] = ctx.product_lines
    assert line.startswith("Trail Tent (camping): Light, two-person tent; 1.9 kg packed.")
    # Options in the variants' order (cheapest first), keys in jsonb's order.
    assert line.endswith("Size options: 2 person. Color options: orange, green."), line
    # Bounded: whole sentences up to DESCRIPTION_CHARS, never the whole description.
    description = line.split(": ", 1)[1].split(" Size options")[0]
    assert len(description) <= DESCRIPTION_CHARS and description.endswith(".")
    assert "Detail number 59" not in line
    # In the prompt and among what the reply is checked against.
    assert "Products:\nTrail Tent (camping)" in ctx.text()
    assert line in ctx.passages()
    assert ctx.catalogue_lines and ctx.catalogue_lines[0].startswith("1. Trail Tent")


def test_a_product_without_description_or_options_is_named_plainly() -> None:
    from chatbot.answerers.l3_records import named_products, product_line

    catalogue_import_file(GOOD_CSV.encode(), filename="t.csv")
    [mug] = named_products("how big is the camp mug?")
    assert product_line(mug) == "Camp Mug (camping)."
    [tent] = named_products("tell me about the tent")
    assert product_line(tent, limit=10) == (
        "Trail Tent (camping): Light… Size options: 2 person. Color options: orange, green."
    )

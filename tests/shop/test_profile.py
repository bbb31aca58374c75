"""The shop profile: one row, validated with clear errors, seeded with the demo's values,
read through a cache that a save clears."""

from __future__ import annotations

import json
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from shop.models import ShopProfile
from shop.profile import shop_profile
from shop.seed import profile_seed
from shop.specs import SpecError, order_id_spec_parse
from shop.values import ProfileError, demo_profile_values, profile_parse


def _values(**changes: Any) -> dict[str, Any]:
    return demo_profile_values() | changes


@pytest.mark.parametrize(
    ("text", "prefix", "low", "high"),
    [("#W{7}", "#W", 7, 7), ("#{3-6}", "#", 3, 6), ("{9}", "", 9, 9), (" SO-{4-8} ", "SO-", 4, 8)],
)
def test_order_id_specs_parse(text: str, prefix: str, low: int, high: int) -> None:
    spec = order_id_spec_parse(text)
    assert (spec.prefix, spec.low, spec.high) == (prefix, low, high)
    assert str(spec) == text.strip()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("W1234567", "prefix and a digit count in braces"),
        ("#W{0}", "digit count must be 1 to 20"),
        ("#W{8-3}", "smaller number first"),
        ("W#{5}", "may only start the prefix"),
        ("#W{7}X", "prefix and a digit count in braces"),
        ("订单{6}", "ASCII letters"),
    ],
)
def test_bad_order_id_specs_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(SpecError, match=says):
        order_id_spec_parse(text)


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"order_id_formats": ""}, "order_id_formats", "at least one"),
        ({"postcode_formats": "us_zip\nmars"}, "postcode_formats", "Unknown postcode format"),
        ({"return_window_days": {"guest": -1}}, "return_window_days", "'guest' is -1"),
        ({"default_membership": "vip"}, "default_membership", "'vip' has no window"),
        ({"return_conditions": {"apparel": {"en": "a", "zh": "b"}}}, "return_conditions", 'a "'),
        (
            {"return_conditions": {"default": {"en": "unused only"}}},
            "return_conditions",
            "no text in zh",
        ),
        ({"product_categories": {"a": ["Mug"], "b": ["mug"]}}, "product_categories", "both"),
        ({"currency_code": "DOLLAR"}, "currency_code", "exactly 3"),
        ({"restocking_fee_percent": "150"}, "restocking_fee_percent", "0 to 100"),
    ],
)
def test_bad_profile_values_name_their_field(changes: dict, field: str, says: str) -> None:
    with pytest.raises(ProfileError) as caught:
        profile_parse(_values(**changes))
    assert caught.value.field == field
    assert says in caught.value.message


def test_return_window_by_membership_and_category() -> None:
    returns = profile_parse(
        _values(
            category_return_window_days={"final sale": 0, "electronics": 14},
            product_categories={"final sale": ["Perfume"], "electronics": ["Laptop"]},
        )
    ).returns
    assert returns.window_days() == 30  # the default membership, guest
    assert returns.window_days(membership="bronze") == 90
    assert returns.window_days(membership="gold") is None  # any time
    assert returns.window_days(membership="unknown level") == 30
    laptop = returns.category("laptop")
    assert laptop == "electronics"
    assert returns.window_days(membership="gold", categories=(laptop,)) == 14
    assert returns.window_days(categories=("default", "final sale")) == 0
    assert returns.category("Jigsaw Puzzle") == "default"


def test_conditions_by_category_in_both_languages() -> None:
    returns = profile_parse(demo_profile_values()).returns
    puzzle = returns.category("Jigsaw Puzzle")
    shirt = returns.category("T-Shirt")
    assert "tags" not in returns.conditions((puzzle,), "en")
    assert "tags" in returns.conditions((shirt,), "en")
    both = returns.conditions((shirt, puzzle, shirt), "zh")
    assert both.count("；") == 1 and "吊牌" in both


@pytest.mark.django_db
def test_no_row_means_the_demo_values_and_setup_shop_warns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "owner")
    monkeypatch.setenv("DJANGO_SUPERUSER_EMAIL", "owner@shop.example")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-password-1234")
    assert not ShopProfile.objects.exists()
    profile = shop_profile()
    assert not profile.from_database
    assert [str(s) for s in profile.order_id_specs] == [demo_profile_values()["order_id_formats"]]
    err = StringIO()
    call_command("setup_shop", "--noinput", stdout=StringIO(), stderr=err)
    assert "no shop profile yet" in err.getvalue()
    profile_seed()
    err = StringIO()
    call_command("setup_shop", "--noinput", stdout=StringIO(), stderr=err)
    assert "no shop profile" not in err.getvalue()


@pytest.mark.django_db
def test_seed_keeps_edits_and_a_save_changes_what_the_service_reads() -> None:
    assert profile_seed() == {"created": 1}
    assert shop_profile().from_database
    row = ShopProfile.objects.get()
    row.return_window_days = {"guest": 45, "gold": None}
    row.order_id_formats = "#{3-6}\n{9}"
    row.restocking_fee_percent = Decimal("10")
    row.full_clean()
    row.save()
    profile = shop_profile()  # the save cleared the cache
    assert profile.returns.window_days() == 45
    assert [str(s) for s in profile.order_id_specs] == ["#{3-6}", "{9}"]
    assert profile.returns.restocking_fee_percent == Decimal("10")
    assert profile_seed() == {"created": 0}
    assert ShopProfile.objects.get().return_window_days == {"guest": 45, "gold": None}
    # A second row cannot exist: saving another edits the one row.
    ShopProfile(**demo_profile_values()).save()
    assert ShopProfile.objects.count() == 1


@pytest.mark.django_db
def test_model_validation_puts_the_error_on_the_field() -> None:
    row = ShopProfile(**_values(order_id_formats="#W{7}\nW1234567"))
    with pytest.raises(ValidationError) as caught:
        row.full_clean()
    assert "order_id_formats" in caught.value.message_dict
    assert "prefix and a digit count" in caught.value.message_dict["order_id_formats"][0]


@pytest.mark.django_db
def test_admin_shows_the_one_row_and_rejects_a_bad_spec(admin_client: Any) -> None:
    assert admin_client.get("/admin/shop/shopprofile/").url == "/admin/shop/shopprofile/add/"
    profile_seed()
    listing = admin_client.get("/admin/shop/shopprofile/")
    assert listing.url == "/admin/shop/shopprofile/1/change/"
    form = {
        k: (v if isinstance(v, str) else json.dumps(v)) for k, v in demo_profile_values().items()
    }
    change = "/admin/shop/shopprofile/1/change/"
    bad = admin_client.post(change, form | {"order_id_formats": "W{x}"})
    assert bad.status_code == 200
    assert "is not an order-id form" in bad.content.decode()
    ok = admin_client.post(
        "/admin/shop/shopprofile/1/change/",
        form | {"return_window_days": '{"guest": 60, "gold": null}'},
    )
    assert ok.status_code == 302
    assert shop_profile().returns.window_days() == 60

"""A shop's profile from a file: ``setup_shop --profile FILE`` writes the one row,
checked as the admin checks it; a bad file names its field and writes nothing."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from shop.models import ShopProfile
from shop.profile import shop_profile
from shop.seed import profile_seed

pytestmark = pytest.mark.django_db

SECOND_SHOP = Path(__file__).resolve().parents[1] / "browser" / "second_shop" / "profile.json"


@pytest.fixture(autouse=True)
def _superuser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "owner")
    monkeypatch.setenv("DJANGO_SUPERUSER_EMAIL", "owner@shop.example")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-password-1234")


def test_setup_shop_loads_a_profile_file_over_the_seeded_one() -> None:
    profile_seed()
    out, err = StringIO(), StringIO()
    call_command("setup_shop", "--noinput", "--profile", str(SECOND_SHOP), stdout=out, stderr=err)
    assert "shop profile: GB, GBP, order ids #{3-6}" in out.getvalue()
    assert "no shop profile" not in err.getvalue()
    assert ShopProfile.objects.count() == 1
    profile = shop_profile()
    assert profile.from_database and profile.currency_symbol == "£"
    assert [str(s) for s in profile.order_id_specs] == ["#{3-6}"]
    assert profile.returns.window_days() == 14
    assert "original box" in profile.returns.conditions(("default",), "en")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"order_id_formats": "W{x}"}, "order_id_formats: 'W{x}' is not an order-id form"),
        ({"currency": "GBP"}, "currency: not a shop profile field"),
        ({"currency_code": None}, "currency_code: missing from the file"),
        ({"currency_code": "POUND"}, "currency_code: give exactly 3 characters"),
        ({"default_membership": "gold"}, "default_membership: 'gold' has no window"),
    ],
)
def test_a_bad_profile_file_names_its_field_and_writes_nothing(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    values = json.loads(SECOND_SHOP.read_text(encoding="utf-8"))
    values.update(change)
    values = {k: v for k, v in values.items() if v is not None}
    bad = tmp_path / "shop.json"
    bad.write_text(json.dumps(values), encoding="utf-8")
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("setup_shop", "--noinput", "--profile", str(bad), stdout=StringIO())
    assert not ShopProfile.objects.exists()


def test_a_profile_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "shop.json"
    bad.write_text("order_id_formats: #{4}", encoding="utf-8")
    with pytest.raises(CommandError, match=re.escape("shop.json: file: not a JSON object")):
        call_command("setup_shop", "--noinput", "--profile", str(bad), stdout=StringIO())
    with pytest.raises(CommandError, match="cannot read"):
        call_command("setup_shop", "--profile", str(tmp_path / "none.json"), stdout=StringIO())

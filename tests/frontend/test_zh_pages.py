"""Issue #36 item 7: the Chinese operator console, agent desk and admin show no English
UI string. Each page is rendered in zh-hans (Accept-Language) and every visible text
node and title / placeholder / aria-label / alt attribute with two or more latin words
and no Chinese character is reported, unless it is data from the database, a product or
technical token, or one of Django's own strings its zh-hans catalogue leaves English."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import models
from django.test import Client
from django.urls import reverse

from releases import services
from releases.assignment import BASELINE_DESCRIPTION
from releases.metrics import reply_record
from releases.models import Release
from tests.releases.conftest import FakeClock, release_clock  # noqa: F401 (fixture)
from tests.releases.test_metrics import facts

pytestmark = pytest.mark.django_db
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
WORD = re.compile(r"\b[A-Za-z]{2,}\b")
# Product, brand and technical names that stay as they are in Chinese.
TOKENS = re.compile(
    r"\b(Tierdesk|CSAT|p50|p95|L1|L2|L3|USD|JSON|VIP|ID|URL|HTTP|HTTPS|HTML|PDF|Markdown|"
    r"UTC|SKU|Redis|PostgreSQL|Prometheus|GGUF|ONNX|HS256|JWT|base64url|WebSocket|AND|OR|"
    r"min|ms|EN|ZH|en|zh|zh-hans|Django|[\w-]+\.(?:yml|yaml|json|csv|md|py|js|html))\b"
)
# Django's own admin strings that its zh-hans catalogue does not translate (not ours to patch).
DJANGO_OWN = {"Add link", "Change or view list link", "Model name", "Skip to main content"}
# django-axes ships no Chinese catalogue: its model names are its own, like Django's.
THIRD_PARTY = {"Access attempts", "Access failures", "Access logs"}
ATTRS = ("title", "placeholder", "aria-label", "alt")
OUR_APPS = {
    *("desk", "chatbot", "orders", "releases", "routing", "knowledge", "inference", "frontend"),
}


class Visible(HTMLParser):
    """The text a person sees or hears: text nodes outside script/style, and the
    attributes a browser shows (tooltips, placeholders) or reads out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "template"):
            self._skip += 1
        for name, value in attrs:
            if name in ATTRS and value:
                self.texts.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "template") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.texts.append(data)


def db_values() -> list[str]:
    """Every text value stored by our apps' models (and users): data, not UI strings,
    except the ones the system itself writes as msgids. Longest first, so a value is
    removed before any shorter value inside it."""
    values: set[str] = set()
    for model in apps.get_models():
        if model._meta.app_label not in OUR_APPS | {"auth"}:
            continue
        fields = [
            f.name
            for f in model._meta.get_fields()
            if isinstance(f, models.CharField | models.TextField | models.JSONField)
            and not f.choices
        ]
        for row in model._default_manager.values_list(*fields) if fields else []:
            for v in row:
                if isinstance(v, dict | list):
                    values.add(json.dumps(v))
                    values.add(json.dumps(v, ensure_ascii=False))
                elif v and str(v).strip():
                    values.add(str(v).strip())
        for obj in model._default_manager.all()[:200]:
            values.add(str(obj))
    values.discard(BASELINE_DESCRIPTION)
    return sorted(values, key=len, reverse=True)


def english(text: str) -> bool:
    text = " ".join(text.split())
    if CJK.search(text) or len(WORD.findall(TOKENS.sub(" ", text))) < 2:
        return False
    try:  # a JSON value (a configuration, its example) is technical, not prose
        return not isinstance(json.loads(text), dict | list)
    except ValueError:
        return True


def untranslated(html: str, data: list[str]) -> list[str]:
    parser = Visible()
    parser.feed(html)
    found = []
    for raw in parser.texts:
        text = " ".join(raw.split())
        if not english(text) or text in DJANGO_OWN | THIRD_PARTY:
            continue
        rest = text
        for value in data:
            if value in rest:
                rest = rest.replace(value, " ")
        if english(rest):
            found.append(text)
    return sorted(set(found))


@pytest.fixture
def zh_client(db: None) -> Client:
    user = get_user_model().objects.create_superuser("boss", password="pw-boss")
    client = Client()
    client.force_login(user)
    return client


def console_data(clock: FakeClock, user: Any) -> Release:
    """A running candidate with replies on both variants and tiers, and handed-off
    conversations in the window, so every console chart draws its legend."""
    from chatbot.models import Conversation

    release = services.release_create(name="cand", config={}, user=user, reason="x")
    services.release_start(release_id=release.pk, user=user, reason="go")
    stable = Release.objects.get(is_stable=True)
    for i in range(12):
        clock.advance(minutes=5)
        reply_record(facts(release_id=stable.pk, first_chunk_ms=200.0 + i))
        reply_record(
            facts(release_id=release.pk, variant="candidate", tier="L2", first_chunk_ms=600.0)
        )
    for i in range(3):
        conv = Conversation.objects.create()
        at = clock() - timedelta(minutes=30 * (i + 1))
        Conversation.objects.filter(pk=conv.pk).update(
            created_at=at,
            handoff_queued_at=at,
            handoff_first_reply_at=at + timedelta(minutes=2),
        )
    return release


def test_the_console_in_chinese_has_no_english_ui_string(
    zh_client: Client,
    release_clock: FakeClock,  # noqa: F811
) -> None:
    console_data(release_clock, get_user_model().objects.get(username="boss"))
    page = zh_client.get("/operators/?hours=6", headers=ZH)
    html = page.content.decode()
    assert page.status_code == 200 and '<html lang="zh-hans"' in html
    # Every chart has data, so the legends are on the page (not "no data").
    assert html.count('class="legend"') >= 9, "some console chart drew no legend"
    bad = untranslated(html, db_values())
    assert not bad, "English on the zh console:\n" + "\n".join(bad)


def test_the_consoles_confirmation_and_outcome_in_chinese(
    zh_client: Client,
    release_clock: FakeClock,  # noqa: F811
) -> None:
    release = console_data(release_clock, get_user_model().objects.get(username="boss"))
    url = f"/operators/releases/{release.pk}/"
    data = db_values()
    for action, form in (("weight", {"weight": "20"}), ("pause", {}), ("weight", {"weight": 90})):
        post = {"reason": "检查", "hours": "6", **form}
        confirm = zh_client.post(url + action, post, headers=ZH, follow=True)
        html = confirm.content.decode()
        assert confirm.status_code == 200 and '<html lang="zh-hans"' in html
        bad = untranslated(html, data)
        assert not bad, f"English on the zh {action} confirmation:\n" + "\n".join(bad)
    done = zh_client.post(
        url + "pause", {"reason": "检查", "confirmed": "on"}, headers=ZH, follow=True
    )
    assert "已暂停" in done.content.decode()
    assert not untranslated(done.content.decode(), data)


def test_the_scan_reports_english_and_lets_data_and_tokens_through() -> None:
    html = (
        '<p>没有数据</p><p title="Try a question">x</p><text class="legend">all-L3 baseline'
        "</text><script>var a = 'not visible text';</script><p>Gift cards never expire</p>"
        "<p>p95 L3 CSAT</p><p>Add link</p>"
    )
    assert untranslated(html, ["Gift cards never expire"]) == ["Try a question", "all-L3 baseline"]


STANDARD_VIEWS = ("_changelist", "_add", "_history", "_delete", "_change", "_autocomplete")


def admin_urls() -> list[str]:
    """The admin index, and per registered model of ours its list and one change page
    (the add page when there is no row)."""
    urls = ["/admin/"]
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        if meta.app_label not in OUR_APPS:
            continue
        base = f"/admin/{meta.app_label}/{meta.model_name}/"
        urls.append(base)
        obj = model._default_manager.order_by("pk").first()
        if obj is not None:
            urls.append(f"{base}{obj.pk}/change/")
        elif model_admin.has_add_permission(_Request()):  # type: ignore[arg-type]
            urls.append(f"{base}add/")
        # The model's own admin pages without a parameter (import, try a question, ...).
        for pattern in model_admin.get_urls():
            name = getattr(pattern, "name", None) or ""
            route = str(pattern.pattern)
            if name and "<" not in route and not name.endswith(STANDARD_VIEWS):
                urls.append(reverse(f"admin:{name}"))
    return urls


class _Request:
    """Enough of a request for ``has_add_permission`` as a superuser."""

    class user:
        is_active = is_staff = is_superuser = True

        @staticmethod
        def has_perm(perm: str, obj: Any = None) -> bool:
            return True


def conversation_with_a_photo() -> Any:
    """A Chinese shopper's conversation where they sent a photo and a line about it: the
    admin shows it as a transcript (bubbles, the photo as a thumbnail)."""
    from chatbot.models import Attachment, Conversation, Message

    conv = Conversation.objects.create(customer_id="james_li_5688", language="zh")
    sent = Message.objects.create(
        conversation=conv, role="user", text="", status="complete", intent="attachment"
    )
    Attachment.objects.create(
        conversation=conv,
        message=sent,
        file="attachments/dent.png",
        name="dent.png",
        content_type="image/png",
        size=100,
        width=64,
        height=48,
    )
    Message.objects.create(conversation=conv, role="user", text="包裹压坏了", status="complete")
    return conv


def test_the_admin_in_chinese_has_no_english_ui_string(
    zh_client: Client, seeded_shop: None
) -> None:
    conv = conversation_with_a_photo()
    transcript = zh_client.get(f"/admin/chatbot/conversation/{conv.pk}/change/", headers=ZH)
    assert 'class="td-photo"' in transcript.content.decode()  # the scan below sees its title
    data = db_values()
    found: dict[str, str] = {}  # each English string, and the first page showing it
    for url in admin_urls():
        page = zh_client.get(url, headers=ZH)
        if page.status_code in (302, 405):  # a POST endpoint (choosing the out-of-scope point)
            continue
        assert page.status_code == 200, url
        for text in untranslated(page.content.decode(), data):
            found.setdefault(text, url)
    assert not found, "English in the zh admin:\n" + "\n".join(
        f"{url}  {text}" for text, url in sorted(found.items(), key=lambda kv: kv[1])
    )


def test_the_desk_in_chinese_has_no_english_ui_string(zh_client: Client) -> None:
    page = zh_client.get("/desk/", headers=ZH)
    html = page.content.decode()
    assert page.status_code == 200 and '<html lang="zh-hans"' in html
    # desk.js takes its strings from strings.js, in the page's language.
    assert html.index("desk/strings.js") < html.index("desk/desk.js")
    bad = untranslated(html, db_values())
    assert not bad, "English on the zh desk:\n" + "\n".join(bad)
    # In English the page says so, and desk.js picks the English strings.
    en = zh_client.get("/desk/", headers={"Accept-Language": "en"}).content.decode()
    assert '<html lang="en"' in en and "Nobody is waiting." in en


def _js_block(source: str, lang: str) -> str:
    start = source.index(f"\n  {lang}: {{")
    return source[start : source.index("\n  },", start)]


def test_the_desks_script_strings_have_a_chinese_text_for_every_english_one() -> None:
    source = (settings.BASE_DIR / "desk" / "static" / "desk" / "strings.js").read_text()
    en, zh = _js_block(source, "en"), _js_block(source, "zh")
    keys = re.compile(r"^    (\w+):", re.M)
    assert keys.findall(en) == keys.findall(zh) and len(keys.findall(en)) > 40
    # Every literal of the Chinese block, with its ${...} holes left out; a quoted key
    # of a word table ("return requested": ...) is the server's code, not a text.
    literals = re.findall(r'"((?:[^"\\]|\\.)*)"(:?)|`([^`]*)`', zh)
    texts = [re.sub(r"\$\{[^}]*\}", " ", a or b) for a, key, b in literals if not key]
    assert len(texts) >= 40
    bad = [t for t in texts if english(t)]
    assert not bad, "English in the desk's zh strings:\n" + "\n".join(bad)
    english_texts = re.findall(r'"((?:[^"\\]|\\.)*)"', en)
    assert [t for t in english_texts if english(t)], "the scan sees the English block's English"


def _js_table(block: str, name: str) -> dict[str, str]:
    """A word table of one language's block: {code: text}."""
    start = block.index(f"\n    {name}: {{")
    body = block[start : block.index("\n    },", start)]
    rows = re.findall(r'^      (?:"([^"]+)"|(\w+)): "([^"]*)",$', body, re.M)
    return {quoted or bare: text for quoted, bare, text in rows}


def test_the_desk_words_order_statuses_and_identities_in_the_agents_language() -> None:
    """The customer panel shows an order's status and how the shopper was verified as
    words of the agent's language: the desk's tables hold every status of the shop's
    order tables and every way of verifying, worded as the admin words them (the models'
    choice labels through our catalogue). A status the tables don't know is the shop
    system's own and shows as it came (desk.js ``word``)."""
    from django.utils import translation

    from chatbot.models import Conversation
    from chatbot.orders.models import Order

    source = (settings.BASE_DIR / "desk" / "static" / "desk" / "strings.js").read_text()
    for lang, django_language in (("en", "en"), ("zh", "zh-hans")):
        block = _js_block(source, lang)
        with translation.override(django_language):
            statuses = {value: str(label) for value, label in Order.Status.choices}
            identities = {
                value: str(label)
                for value, label in Conversation.Identity.choices
                if value != Conversation.Identity.NONE
            }
        assert _js_table(block, "orderStatuses") == statuses, lang
        assert _js_table(block, "verifiedHow") == identities, lang
        assert set(_js_table(block, "transferReasons")) == {"not_yours", "unknown_agent"}
        assert set(_js_table(block, "deskErrors")) == {"forbidden"}
    zh = _js_block(source, "zh")
    for table in ("orderStatuses", "verifiedHow", "transferReasons", "deskErrors"):
        assert all(CJK.search(text) for text in _js_table(zh, table).values()), table
    desk_js = (settings.BASE_DIR / "desk" / "static" / "desk" / "desk.js").read_text()
    for shown in ("S.orderStatuses, o.status", "S.verifiedHow, c.verified_by"):
        assert f"word({shown})" in desk_js, shown

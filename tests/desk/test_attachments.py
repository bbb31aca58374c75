"""Shoppers' photos (chatbot/attachments.py, desk/views.py): the type comes from the bytes,
the size is capped, EXIF location never reaches storage, the files are served to the
shopper by a signed link, to agents and to staff reading the admin's transcript only,
and retention and erase delete the files themselves. Real database, real storage
(FileSystemStorage in a temporary folder), real Pillow and pillow-heif; Django's test
client."""

from __future__ import annotations

import base64
import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from django.utils import timezone
from PIL import Image

from chatbot.handoff import H
from chatbot.models import Attachment, Conversation, Message
from desk.models import Ticket
from tests.desk.conftest import user_make

pytestmark = pytest.mark.django_db

SHOP = "http://shop.localhost:8080"
GPS_IFD = 0x8825


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    settings.TIERDESK_WIDGET_ORIGINS = [SHOP]
    return tmp_path


def picture(fmt: str, *, gps: bool = False, size: tuple[int, int] = (64, 48)) -> bytes:
    """A small photo in ``fmt``; with ``gps``, an EXIF block that says where it was taken."""
    image = Image.new("RGB", size, (200, 40, 40))
    options: dict[str, Any] = {}
    if gps:
        exif = Image.Exif()
        exif[0x010F] = "PhoneMaker"  # Make
        exif.get_ifd(GPS_IFD).update({1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 36.0)})
        options["exif"] = exif.tobytes()
    if fmt == "HEIF":
        from pillow_heif import register_heif_opener

        register_heif_opener()
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def upload(
    data: bytes,
    name: str,
    *,
    session: str,
    content_type: str = "image/jpeg",
    purpose: str = "chat",
    origin: str = "",
) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    headers = {"Origin": origin} if origin else {}
    return Client().post(
        "/attachments/",
        {"session": session, "for": purpose, "file": SimpleUploadedFile(name, data, content_type)},
        headers=headers,
    )


def stored_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_a_png_named_jpg_is_stored_as_the_png_it_is(media: Path) -> None:
    session = Conversation.objects.create().session_key
    response = upload(picture("PNG"), "parcel.jpg", session=session, content_type="image/jpeg")
    assert response.status_code == 200, response.content
    attachment = Attachment.objects.get()
    assert attachment.content_type == "image/png"
    stored_name = str(attachment.file.name)
    assert stored_name.endswith(".png") and "parcel" not in stored_name
    assert attachment.name == "parcel.jpg"
    with attachment.file.open("rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    # The photo is the shopper's message in the conversation.
    assert attachment.message is not None and attachment.message.role == Message.Role.USER
    assert response.json()["attachment"]["url"].startswith("/attachments/")


def test_a_text_file_named_png_is_refused_and_nothing_is_stored(media: Path) -> None:
    session = Conversation.objects.create().session_key
    response = upload(
        b"just some words, not a picture\n" * 10,
        "photo.png",
        session=session,
        content_type="image/png",
    )
    assert response.status_code == 400
    assert response.json()["error"] == "bad_type"
    assert not Attachment.objects.exists() and not Message.objects.exists()
    assert stored_files(media) == []


def test_a_photo_over_the_limit_is_refused(media: Path, settings: Any) -> None:
    session = Conversation.objects.create().session_key
    big = picture("PNG", size=(400, 400))
    settings.TIERDESK_ATTACHMENT_MAX_BYTES = len(big) - 1
    response = upload(big, "big.png", session=session, content_type="image/png")
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"
    # One far past the limit is refused from its Content-Length, before it is read.
    settings.TIERDESK_ATTACHMENT_MAX_BYTES = 1000
    response = upload(big + b"\0" * 40_000, "big.png", session=session)
    assert response.status_code == 413
    assert stored_files(media) == []


def test_a_jpegs_gps_location_is_gone_from_the_stored_file(media: Path) -> None:
    original = picture("JPEG", gps=True)
    assert Image.open(io.BytesIO(original)).getexif().get_ifd(GPS_IFD)  # it is there
    session = Conversation.objects.create().session_key
    assert upload(original, "IMG_0001.JPG", session=session).status_code == 200
    attachment = Attachment.objects.get()
    with attachment.file.open("rb") as handle:
        stored = handle.read()
    image = Image.open(io.BytesIO(stored))
    assert image.format == "JPEG" and image.size == (64, 48)
    assert not image.getexif().get_ifd(GPS_IFD)
    assert len(image.getexif()) == 0 and b"Exif" not in stored and b"PhoneMaker" not in stored


def test_a_heic_photo_is_stored_as_jpeg_without_its_location(media: Path) -> None:
    original = picture("HEIF", gps=True)
    session = Conversation.objects.create().session_key
    response = upload(original, "IMG_0002.HEIC", session=session, content_type="image/heic")
    assert response.status_code == 200, response.content
    attachment = Attachment.objects.get()
    assert attachment.content_type == "image/jpeg"
    with attachment.file.open("rb") as handle:
        stored = handle.read()
    assert Image.open(io.BytesIO(stored)).format == "JPEG"
    assert b"Exif" not in stored and b"PhoneMaker" not in stored


def test_an_unknown_session_and_another_origin_are_refused(media: Path) -> None:
    assert upload(picture("PNG"), "a.png", session="nope").status_code == 403
    session = Conversation.objects.create().session_key
    response = upload(picture("PNG"), "a.png", session=session, origin="http://evil.test")
    assert response.status_code == 403 and "Access-Control-Allow-Origin" not in response
    response = upload(picture("PNG"), "a.png", session=session, origin=SHOP)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == SHOP
    assert stored_files(media) and Attachment.objects.count() == 1


def test_the_photo_is_served_to_its_shopper_by_signed_link_and_to_agents_only(
    media: Path,
) -> None:
    conversation = Conversation.objects.create()
    response = upload(picture("PNG"), "a.png", session=conversation.session_key)
    link = response.json()["attachment"]["url"]
    attachment = Attachment.objects.get()
    assert Client().get(link).status_code == 200
    # The photo's id alone, or a link with its signature changed, gives nothing.
    assert Client().get(f"/attachments/{attachment.public_id.hex}").status_code == 404
    assert Client().get(link[:-2] + "xx").status_code == 404
    desk_link = f"/desk/attachments/{attachment.public_id}"
    assert Client().get(desk_link).status_code == 302  # to the login page
    operator = user_make("olga_ops", group=None)
    client = Client()
    client.force_login(operator)
    assert client.get(desk_link).status_code == 403
    agent = user_make("amy_agent")
    client.force_login(agent)
    # Not in the queue, not theirs: not shown.
    assert client.get(desk_link).status_code == 404
    Conversation.objects.filter(pk=conversation.pk).update(handoff=H.QUEUED)
    response = client.get(desk_link)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert "private" in response["Cache-Control"]


def test_the_admin_transcript_shows_the_photo_to_staff_who_read_conversations(
    media: Path,
) -> None:
    from django.contrib.auth.models import Permission

    conversation = Conversation.objects.create()
    assert upload(picture("PNG"), "dent.png", session=conversation.session_key).status_code == 200
    attachment = Attachment.objects.get()
    page = f"/admin/chatbot/conversation/{conversation.pk}/change/"
    photo = f"/admin/chatbot/conversation/{conversation.pk}/photos/{attachment.public_id}/"
    reader = user_make("rita_support", group=None)
    reader.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client = Client()
    client.force_login(reader)
    html = client.get(page).content.decode()
    # The shopper's bubble is a thumbnail linking to the full photo, served by the admin.
    bubble = html[html.index(f'id="message-{attachment.message_id}"') :]
    bubble = bubble[: bubble.index("td-meta")]
    assert f'href="{photo}"' in bubble and f'src="{photo}"' in bubble and 'alt="dent.png"' in bubble
    assert "—" not in bubble  # a photo is not an empty message
    response = client.get(photo)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert "private" in response["Cache-Control"]
    # Not signed in: the login page. Staff who may not read conversations (an agent,
    # who sees photos in the desk): refused. The photo through another conversation: none.
    assert Client().get(photo).status_code == 302
    client.force_login(user_make("amy_agent"))
    assert client.get(photo).status_code == 403
    client.force_login(reader)
    other = Conversation.objects.create()
    assert client.get(photo.replace(f"/{conversation.pk}/", f"/{other.pk}/")).status_code == 404
    assert (
        client.get(photo.replace(str(attachment.public_id), str(other.public_id))).status_code
        == 404
    )


def test_retention_deletes_old_photos_files_and_all(
    media: Path, django_capture_on_commit_callbacks: Any
) -> None:
    from chatbot.privacy import privacy_purge

    session = Conversation.objects.create().session_key
    assert upload(picture("PNG"), "old.png", session=session).status_code == 200
    assert (
        upload(picture("PNG"), "ticket.png", session=session, purpose="ticket").status_code == 200
    )
    name = str(Attachment.objects.get(name="old.png").file.name)
    assert default_storage.exists(name) and len(stored_files(media)) == 2
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        counts = privacy_purge(now=now)
    assert Attachment.objects.count() == 2  # not old yet
    with django_capture_on_commit_callbacks(execute=True):
        counts = privacy_purge(now=now + timedelta(days=400))
    assert counts["conversations"] == 1
    assert not Attachment.objects.exists()
    assert not default_storage.exists(name) and stored_files(media) == []


def test_erase_deletes_the_shoppers_photos_and_export_carries_them(
    media: Path, django_capture_on_commit_callbacks: Any
) -> None:
    from chatbot.privacy import shopper_erase, shopper_export

    mine = Conversation.objects.create(customer_id="jane_1")
    assert upload(picture("PNG"), "wet.png", session=mine.session_key).status_code == 200
    # A photo sent with a ticket from an anonymous conversation, filed by email.
    anonymous = Conversation.objects.create()
    response = upload(picture("PNG"), "box.png", session=anonymous.session_key, purpose="ticket")
    photo_id = response.json()["attachment"]["id"]
    response = Client().post(
        "/tickets/",
        {
            "session": anonymous.session_key,
            "email": "jane@x.example",
            "question": "The box came wet.",
            "attachments": [photo_id],
        },
        content_type="application/json",
    )
    assert response.status_code == 200
    assert [str(a.public_id) for a in Ticket.objects.get().attachments.all()] == [photo_id]
    # Someone else's photo stays.
    other = Conversation.objects.create(customer_id="someone_else")
    assert upload(picture("PNG"), "x.png", session=other.session_key).status_code == 200
    assert len(stored_files(media)) == 3

    exported = shopper_export(customer_id="jane_1", emails=["jane@x.example"])
    chat_photo = exported["conversations"][0]["attachments"][0]
    assert chat_photo["name"] == "wet.png"
    assert base64.b64decode(chat_photo["content_base64"])[:4] == b"\x89PNG"
    assert exported["desk"][0]["attachments"][0]["id"] == photo_id

    with django_capture_on_commit_callbacks(execute=True):
        counts = shopper_erase(customer_id="jane_1", emails=["jane@x.example"])
    assert counts["desk"] == 1
    assert list(Attachment.objects.values_list("name", flat=True)) == ["x.png"]
    assert len(stored_files(media)) == 1


def test_a_photo_in_a_queued_conversation_is_in_the_agents_view(media: Path) -> None:
    from desk import services

    conversation = Conversation.objects.create(handoff=H.QUEUED, handoff_queued_at=timezone.now())
    assert upload(picture("PNG"), "dent.png", session=conversation.session_key).status_code == 200
    agent = user_make("ana_agent")
    detail = services.conversation_detail(agent_id=agent.pk, conversation_id=conversation.pk)
    [message] = detail["messages"]
    assert message["role"] == "user" and message["attachment"]["name"] == "dent.png"
    assert message["attachment"]["url"].startswith("/desk/attachments/")


def test_without_pillow_heif_a_heic_photo_is_refused_by_name(
    media: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shop that uninstalled pillow-heif (NOTICE): the package is present here, so its
    # absence is simulated by making its import fail.
    original = picture("HEIF")
    monkeypatch.setitem(__import__("sys").modules, "pillow_heif", None)
    session = Conversation.objects.create().session_key
    response = upload(original, "IMG_0003.HEIC", session=session, content_type="image/heic")
    assert response.status_code == 400 and response.json()["error"] == "heic_off"
    assert stored_files(media) == []

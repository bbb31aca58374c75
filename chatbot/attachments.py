"""Shoppers' photos: checked, cleaned and stored (docs/widget.md, "Photos").

A photo is accepted when its bytes say it is a JPEG, PNG, WebP or HEIC (the file name and
the browser's Content-Type are the shopper's to choose, so they decide nothing), it is
no larger than ``TIERDESK_ATTACHMENT_MAX_BYTES`` and Pillow decodes it. What is stored
is a re-encoding of the decoded pixels (turned upright first): no EXIF, no XMP, so no
location, camera serial or time the shopper didn't mean to send. HEIC, which browsers
other than Safari can't show to an agent, is stored as JPEG.

Files go through Django's storage API (``STORAGES["default"]``, set by
``TIERDESK_MEDIA_STORAGE``): a shop can point it at object storage. A row's file is
deleted from storage whenever the row is deleted, by whatever path (retention, erase,
a conversation's or message's cascade): ``_file_delete`` below, after the commit.
"""

from __future__ import annotations

import base64
import io
import logging
import uuid
import warnings
from dataclasses import dataclass
from typing import IO, Any

import filetype
from django.conf import settings
from django.core import signing
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.http import FileResponse
from django.urls import reverse
from django.utils import timezone
from PIL import Image, ImageOps, UnidentifiedImageError

from .models import Attachment, Conversation, Message

logger = logging.getLogger(__name__)

# The type read from the bytes -> how it is stored (Pillow format, content type, extension).
STORED_AS = {
    "image/jpeg": ("JPEG", "image/jpeg", ".jpg"),
    "image/png": ("PNG", "image/png", ".png"),
    "image/webp": ("WEBP", "image/webp", ".webp"),
    "image/heic": ("JPEG", "image/jpeg", ".jpg"),
}
# Pillow's name of each accepted type: the decoder must agree with the magic number.
DECODED_AS = {
    "image/jpeg": {"JPEG", "MPO"},
    "image/png": {"PNG"},
    "image/webp": {"WEBP"},
    "image/heic": {"HEIF"},
}
# A photo larger than this many pixels is refused before it is decoded (a small file
# can claim a huge canvas: a decompression bomb).
MAX_PIXELS = 50_000_000
LINK_SALT = "tierdesk.attachment"
NAME_MAX = 120


class AttachmentRefused(Exception):
    """An upload that is not stored; ``code`` is what the widget words (EN/ZH)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True)
class CleanPhoto:
    data: bytes
    content_type: str
    extension: str
    width: int
    height: int


def _heif_opener() -> bool:
    """Teach Pillow HEIC (pillow-heif, a dependency); False if it is not installed."""
    try:
        from pillow_heif import register_heif_opener
    except ImportError:
        return False
    register_heif_opener()
    return True


def photo_clean(data: bytes) -> CleanPhoto:
    """The photo's type from its bytes, its pixels re-encoded without metadata.
    Raises AttachmentRefused with the reason."""
    if len(data) > settings.TIERDESK_ATTACHMENT_MAX_BYTES:
        raise AttachmentRefused(
            "too_large", f"larger than {settings.TIERDESK_ATTACHMENT_MAX_BYTES} bytes"
        )
    kind = filetype.guess(data[:8192])
    mime = kind.mime if kind is not None else ""
    if mime not in STORED_AS:
        raise AttachmentRefused("bad_type", f"not a JPEG, PNG, WebP or HEIC photo ({mime or '?'})")
    if mime == "image/heic" and not _heif_opener():
        raise AttachmentRefused("heic_off", "HEIC needs pillow-heif, which is not installed")
    fmt, content_type, extension = STORED_AS[mime]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            if image.format not in DECODED_AS[mime]:
                raise AttachmentRefused("bad_type", f"{mime} that decodes as {image.format}")
            if image.width * image.height > MAX_PIXELS:
                raise AttachmentRefused("too_large", f"{image.width}x{image.height} pixels")
            image.load()
            # EXIF goes, so its orientation must be applied to the pixels first.
            upright = ImageOps.exif_transpose(image)
    except AttachmentRefused:
        raise
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Warning) as exc:
        raise AttachmentRefused("unreadable", f"could not decode: {exc}") from exc
    icc = image.info.get("icc_profile")
    out = io.BytesIO()
    options: dict[str, Any] = {"icc_profile": icc} if icc else {}
    if fmt == "JPEG":
        if upright.mode not in ("RGB", "L"):
            upright = upright.convert("RGB")
        upright.save(out, "JPEG", quality=90, **options)
    elif fmt == "WEBP":
        upright.save(out, "WEBP", quality=90, **options)
    else:
        upright.save(out, "PNG", **options)
    return CleanPhoto(out.getvalue(), content_type, extension, upright.width, upright.height)


def _read_limited(upload: IO[bytes]) -> bytes:
    """At most one byte past the limit: enough to tell that it is too large."""
    return upload.read(settings.TIERDESK_ATTACHMENT_MAX_BYTES + 1)


def attachment_store(
    *, session_key: str, upload: IO[bytes], name: str, with_message: bool
) -> Attachment:
    """Store a shopper's photo in their conversation: as a message of its own (chat,
    ``with_message``) or unattached until a ticket takes it (the ticket form)."""
    conversation = Conversation.objects.filter(session_key=session_key[:64]).first()
    if conversation is None:
        raise AttachmentRefused("unknown_session", "no conversation with this session key")
    held = Attachment.objects.filter(conversation=conversation).count()
    if held >= settings.TIERDESK_ATTACHMENT_MAX_PER_CONVERSATION:
        raise AttachmentRefused("too_many", f"this conversation has {held} photos")
    photo = photo_clean(_read_limited(upload))
    attachment = Attachment(
        conversation=conversation,
        name=name.replace("/", "_").replace("\\", "_").strip()[:NAME_MAX],
        content_type=photo.content_type,
        size=len(photo.data),
        width=photo.width,
        height=photo.height,
        created_at=timezone.now(),
    )
    # The file first, the rows in one transaction after: a failed write leaves no row
    # pointing at nothing, and a failed row removes the file it would have owned.
    attachment.file.save(
        f"{uuid.uuid4().hex}{photo.extension}", ContentFile(photo.data), save=False
    )
    try:
        with transaction.atomic():
            if with_message:
                attachment.message = Message.objects.create(
                    conversation=conversation,
                    role=Message.Role.USER,
                    text="",
                    status=Message.Status.COMPLETE,
                    language=conversation.language,
                    intent="attachment",
                    metadata={"attachment": str(attachment.public_id)},
                )
            attachment.save()
            Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now())
    except Exception:
        attachment.file.storage.delete(str(attachment.file.name))
        raise
    logger.info(
        "attachment stored conversation=%s type=%s bytes=%s",
        conversation.pk,
        photo.content_type,
        attachment.size,
    )
    return attachment


def shopper_link(attachment: Attachment) -> str:
    """The path of the shopper's own photo: signed, so it can't be guessed, and valid
    for TIERDESK_ATTACHMENT_LINK_S (the widget gets a new one on every reconnect)."""
    token = signing.TimestampSigner(salt=LINK_SALT).sign(attachment.public_id.hex)
    return reverse("attachment_shopper", args=[token])


def attachment_by_link(token: str) -> Attachment | None:
    try:
        public_id = signing.TimestampSigner(salt=LINK_SALT).unsign(
            token, max_age=settings.TIERDESK_ATTACHMENT_LINK_S
        )
        return Attachment.objects.filter(public_id=uuid.UUID(hex=public_id)).first()
    except (signing.BadSignature, ValueError):
        return None


def shopper_view(attachment: Attachment) -> dict[str, Any]:
    """The photo as the widget shows it (history, upload answer)."""
    return {
        "id": str(attachment.public_id),
        "name": attachment.name,
        "url": shopper_link(attachment),
        "width": attachment.width,
        "height": attachment.height,
    }


def photo_response(attachment: Attachment) -> FileResponse:
    """The photo itself, for whoever the calling view let see it (an agent in the desk,
    staff reading the transcript in the admin, the shopper by signed link)."""
    response = FileResponse(attachment.file.open("rb"), content_type=attachment.content_type)
    # Personal data: never in a shared cache.
    response["Cache-Control"] = "private, max-age=3600"
    response["Content-Disposition"] = "inline"
    return response


def attachment_export(attachment: Attachment) -> dict[str, Any]:
    """One photo in a shopper's data export: its facts and the photo itself (base64),
    so the export is one self-contained document."""
    with attachment.file.open("rb") as handle:
        content = base64.b64encode(handle.read()).decode("ascii")
    return {
        "id": str(attachment.public_id),
        "name": attachment.name,
        "content_type": attachment.content_type,
        "size": attachment.size,
        "created_at": attachment.created_at.isoformat(),
        "content_base64": content,
    }


@receiver(post_delete, sender=Attachment, dispatch_uid="chatbot.attachment_file_delete")
def _file_delete(sender: Any, instance: Attachment, **kwargs: Any) -> None:
    """The file goes with its row, once the deletion is committed (a rolled-back erase
    keeps both). A storage error is logged: the row is gone either way."""
    name = instance.file.name
    storage = instance.file.storage
    if not name:
        return

    def delete() -> None:
        try:
            storage.delete(name)
        except Exception:
            logger.exception("attachment file %s could not be deleted from storage", name)

    transaction.on_commit(delete)

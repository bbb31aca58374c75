"""The desk page (agents only) and the shoppers' ticket form endpoint.

``/desk/`` needs ``desk.use_desk`` (the "support agents" group): shoppers are never
Django users, so they get the login page, and signed-in staff without the permission
(operators) get a 403. Everything live happens over ``/ws/desk/`` (desk/consumers.py).
``POST /tickets/`` and ``POST /attachments/`` are the widget's: the conversation's
session key proves which conversation they belong to. A shopper's photo is served back
to them at a signed link (``/attachments/<token>``), to agents at
``/desk/attachments/<id>``, and to staff reading the conversation in the admin
(``chatbot.admin.ConversationAdmin.photo``); to no one else.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from chatbot.attachments import (
    AttachmentRefused,
    attachment_by_link,
    attachment_store,
    photo_response,
    shopper_view,
)
from chatbot.handoff import agent_display_name
from chatbot.models import Conversation

from . import services
from .cors import widget_cors

MAX_QUESTION = 4000
# Room for the multipart envelope and the session field around the photo itself.
UPLOAD_OVERHEAD = 16 * 1024
REFUSED_STATUS = {"too_large": 413, "unknown_session": 403, "too_many": 409}


@require_GET
@login_required(login_url="/admin/login/")
@permission_required(services.DESK_PERMISSION, raise_exception=True)
def desk(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "desk/desk.html",
        {
            "agent_name": agent_display_name(request.user),
            "timeout_s": settings.TIERDESK_HANDOFF_AGENT_TIMEOUT_S,
        },
    )


@csrf_exempt  # the widget lives on the shop's pages; the session key authorises it
@widget_cors  # their origins: TIERDESK_WIDGET_ORIGINS (desk/cors.py)
@require_POST
def ticket_new(request: HttpRequest) -> JsonResponse:
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        return JsonResponse({"ok": False, "error": "bad_json"}, status=400)
    session = str(data.get("session") or "")[:64]
    email = str(data.get("email") or "").strip()[:254]
    question = str(data.get("question") or "").strip()[:MAX_QUESTION]
    try:
        validate_email(email)
    except ValidationError:
        return JsonResponse({"ok": False, "error": "bad_email"}, status=400)
    if not question:
        return JsonResponse({"ok": False, "error": "empty_question"}, status=400)
    if not session or not Conversation.objects.filter(session_key=session).exists():
        return JsonResponse({"ok": False, "error": "unknown_session"}, status=403)
    photos = data.get("attachments") or []
    ticket = services.ticket_create(
        session_key=session,
        email=email,
        question=question,
        attachments=[str(p) for p in photos] if isinstance(photos, list) else [],
    )
    return JsonResponse({"ok": True, "ticket": ticket.pk})


@csrf_exempt  # the widget lives on the shop's pages; the session key authorises it
@widget_cors  # their origins: TIERDESK_WIDGET_ORIGINS (desk/cors.py)
@require_POST
def attachment_upload(request: HttpRequest) -> JsonResponse:
    """A shopper's photo (multipart: ``session``, ``file``, ``for`` = chat | ticket).
    The answer's ``error`` is a code the widget words in the shopper's language."""
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > settings.TIERDESK_ATTACHMENT_MAX_BYTES + UPLOAD_OVERHEAD:
        # Refused before the body is read.
        return _upload_refused(AttachmentRefused("too_large", f"{length} bytes"))
    upload = request.FILES.get("file")
    if upload is None:
        return _upload_refused(AttachmentRefused("no_file", "no file field"))
    try:
        attachment = attachment_store(
            session_key=str(request.POST.get("session") or ""),
            upload=upload,
            name=str(upload.name or ""),
            with_message=request.POST.get("for", "chat") != "ticket",
        )
    except AttachmentRefused as exc:
        return _upload_refused(exc)
    services.photo_relay(attachment=attachment)
    return JsonResponse(
        {"ok": True, "attachment": shopper_view(attachment), "message_id": attachment.message_id}
    )


def _upload_refused(exc: AttachmentRefused) -> JsonResponse:
    return JsonResponse(
        {"ok": False, "error": exc.code, "detail": exc.detail},
        status=REFUSED_STATUS.get(exc.code, 400),
    )


@require_GET
def attachment_shopper(request: HttpRequest, token: str) -> FileResponse:
    """The shopper's own photo, at the signed link their widget was given."""
    attachment = attachment_by_link(token)
    if attachment is None:
        raise Http404("no such photo, or the link has expired")
    response = photo_response(attachment)
    # The widget shows it on the shop's own pages (another origin).
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response


@require_GET
@login_required(login_url="/admin/login/")
@permission_required(services.DESK_PERMISSION, raise_exception=True)
def attachment_agent(request: HttpRequest, public_id: str) -> FileResponse:
    """A shopper's photo for an agent: in a conversation they may open, or a ticket."""
    attachment = services.photo_for_agent(agent_id=int(request.user.pk or 0), public_id=public_id)
    if attachment is None:
        raise Http404("no such photo in your conversations")
    return photo_response(attachment)

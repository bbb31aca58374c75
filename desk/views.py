"""The desk page (agents only) and the shoppers' ticket form endpoint.

``/desk/`` needs ``desk.use_desk`` (the "support agents" group): shoppers are never
Django users, so they get the login page, and signed-in staff without the permission
(operators) get a 403. Everything live happens over ``/ws/desk/`` (desk/consumers.py).
``POST /tickets/`` is the widget's: the conversation's session key proves which
conversation it belongs to.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from chatbot.handoff import agent_display_name
from chatbot.models import Conversation

from . import services
from .cors import widget_cors

MAX_QUESTION = 4000


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
    ticket = services.ticket_create(session_key=session, email=email, question=question)
    return JsonResponse({"ok": True, "ticket": ticket.pk})

"""Seed the reply templates from routing/seed_data/templates.json (only missing rows)."""

from __future__ import annotations

from django.db import transaction

from .models import Intent, ReplyTemplate
from .templates import reset_template_cache, seed_templates


@transaction.atomic
def templates_seed() -> dict[str, int]:
    created = 0
    for intent_name, keys in seed_templates().items():
        intent, _ = Intent.objects.get_or_create(
            name=intent_name,
            # "dialogue" holds shared texts (ask for identity, clarify...): no
            # utterances, so the classifier never predicts it.
            defaults={"tier": "clarify", "description": "Shared dialogue texts", "enabled": False},
        )
        existing = set(ReplyTemplate.objects.filter(intent=intent).values_list("key", "language"))
        rows = [
            ReplyTemplate(intent=intent, key=key, language=lang, text=text)
            for key, langs in keys.items()
            for lang, text in langs.items()
            if (key, lang) not in existing
        ]
        ReplyTemplate.objects.bulk_create(rows)
        created += len(rows)
    reset_template_cache()
    return {"templates_created": created}

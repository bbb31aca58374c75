"""The two staff groups and what they may do (created at every ``migrate``).

- "operators": releases (create drafts, operate them: weight, pause, resume, promote,
  roll back), the console and the metrics; read-only on conversations and ratings.
  Not the knowledge base or the router's content: grant those per user if needed.
- "support admins": the knowledge base, intents, utterances, templates, slot patterns
  and rules, the shop profile (order-id forms, return policy), the catalogue
  (products, variants, the CSV/JSON import), and reading
  conversations and ratings. Not releases or weights.

The group permissions are re-applied at each migrate: extra rights belong on users
(or other groups), not in edits to these two.
"""

from __future__ import annotations

from typing import Any

OPERATORS = "operators"
SUPPORT_ADMINS = "support admins"

GROUP_PERMISSIONS: dict[str, list[str]] = {
    OPERATORS: [
        "releases.view_release",
        "releases.add_release",
        "releases.change_release",
        "releases.operate_release",
        "releases.view_release_metrics",
        "releases.view_releaseevent",
        "releases.view_guardraildecision",
        "releases.view_metricminute",
        "chatbot.view_conversation",
        "chatbot.view_message",
        "chatbot.view_feedback",
    ],
    SUPPORT_ADMINS: [
        *(
            f"{app}.{action}_{model}"
            for app, models in (
                ("knowledge", ("document", "chunk", "answercard", "deletedseeddocument")),
                ("knowledge", ("knowledgeconflict",)),
                ("routing", ("intent", "utterance", "replytemplate", "slotpattern", "rule")),
                ("shop", ("product", "productvariant")),
            )
            for model in models
            for action in ("add", "change", "delete", "view")
        ),
        "routing.view_classifiermodel",
        "shop.add_shopprofile",
        "shop.change_shopprofile",
        "shop.view_shopprofile",
        "chatbot.view_conversation",
        "chatbot.view_message",
        "chatbot.view_feedback",
    ],
}


def groups_ensure(**kwargs: Any) -> None:
    """post_migrate receiver: create the groups and give them their permissions.

    It runs after every app's migrate; permissions of apps migrated later are added
    on their turn, so the last run leaves both groups complete."""
    from django.contrib.auth.models import Group, Permission

    for name, perms in GROUP_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        wanted = []
        for perm in perms:
            app_label, codename = perm.split(".", 1)
            found = Permission.objects.filter(
                content_type__app_label=app_label, codename=codename
            ).first()
            if found is not None:
                wanted.append(found)
        group.permissions.add(*wanted)

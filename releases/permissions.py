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


# The apps whose permissions the groups name.
_APPS_NAMED = frozenset(
    perm.split(".", 1)[0] for perms in GROUP_PERMISSIONS.values() for perm in perms
)


def groups_ensure(sender: Any = None, using: str = "default", **kwargs: Any) -> None:
    """post_migrate receiver: create the groups and give them their permissions.

    It acts after the migrate of each app the groups name (an app's permissions exist
    only after its own migrate), so the last of them leaves both groups complete. The
    other apps' post_migrate is skipped: a flush re-emits it for every app after each
    transactional test, and nothing the groups hold changes there."""
    from django.contrib.auth.models import Group, Permission

    if sender is not None and getattr(sender, "label", None) not in _APPS_NAMED:
        return
    have = {
        f"{app}.{codename}": pk
        for pk, app, codename in Permission.objects.using(using)
        .filter(content_type__app_label__in=_APPS_NAMED)
        .values_list("pk", "content_type__app_label", "codename")
    }
    for name, perms in GROUP_PERMISSIONS.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        group.permissions.add(*(have[perm] for perm in perms if perm in have))

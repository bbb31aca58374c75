"""The "support agents" group, with the permission to use the desk."""

from django.db import migrations

AGENTS = "support agents"


PERMISSIONS = [
    ("auditevent", "use_desk", "Can answer shoppers at the agent desk"),
    ("auditevent", "view_auditevent", "Can view audit event"),
    ("note", "view_note", "Can view note"),
    ("ticket", "view_ticket", "Can view ticket"),
]


def group_create(apps, schema_editor):
    # Permissions are normally created after migrate; the group needs them now
    # (post_migrate later finds them there and adds nothing).
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    group, _ = Group.objects.get_or_create(name=AGENTS)
    for model, codename, name in PERMISSIONS:
        content_type, _ = ContentType.objects.get_or_create(app_label="desk", model=model)
        permission, _ = Permission.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )
        group.permissions.add(permission)


def group_delete(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=AGENTS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("desk", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(group_create, group_delete)]

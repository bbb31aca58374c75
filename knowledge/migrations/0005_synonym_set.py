from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0004_chunk_multilingual_embedding"),
    ]

    operations = [
        migrations.CreateModel(
            name="SynonymSet",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "language",
                    models.CharField(
                        choices=[("en", "English"), ("zh", "Chinese")], default="en", max_length=8
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("equivalent", "equivalent: all the terms mean the same"),
                            ("broader", "broader: each term is covered by the target"),
                            ("goods", "kinds of goods: covered by a rule about items in general"),
                        ],
                        default="equivalent",
                        max_length=16,
                    ),
                ),
                ("terms", models.TextField(help_text="Separated by commas or new lines.")),
                (
                    "target",
                    models.CharField(
                        blank=True,
                        help_text="Broader sets only: what the terms are covered by (commas between several).",
                        max_length=300,
                    ),
                ),
                ("note", models.CharField(blank=True, max_length=300)),
                ("enabled", models.BooleanField(default=True)),
                (
                    "seed_key",
                    models.CharField(blank=True, max_length=120, null=True, unique=True),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "verbose_name": "synonym set",
                "ordering": ["language", "kind", "pk"],
            },
        ),
    ]

from django.urls import path

from . import operators

app_name = "operators"

urlpatterns = [
    path("", operators.console, name="console"),
    path("releases/new", operators.release_new, name="release_new"),
    path(
        "releases/<int:release_id>/<slug:action>",
        operators.release_action,
        name="release_action",
    ),
]

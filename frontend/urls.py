from django.urls import path

from . import help_centre, views

app_name = "frontend"

urlpatterns = [
    path("", views.demo_shop, name="demo"),
    path("help/", help_centre.index, name="help_index"),
    path("help/<int:document_id>/", help_centre.article, name="help_article"),
]

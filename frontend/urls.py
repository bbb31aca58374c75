from django.urls import path

from . import views

app_name = "frontend"

urlpatterns = [
    path("", views.demo_shop, name="demo"),
]

from django.urls import path

from . import views

app_name = "desk"

urlpatterns = [
    path("", views.desk, name="desk"),
    path("attachments/<str:public_id>", views.attachment_agent, name="attachment"),
]

from django.contrib import admin
from django.urls import include, path

from desk import views as desk_views
from frontend import operators

from . import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("operators/", include("frontend.operator_urls")),
    path("desk/", include("desk.urls")),
    path("tickets/", desk_views.ticket_new, name="ticket_new"),
    path("attachments/", desk_views.attachment_upload, name="attachment_upload"),
    path("attachments/<str:token>", desk_views.attachment_shopper, name="attachment_shopper"),
    path("metrics", operators.metrics, name="metrics"),
    path("", include("frontend.urls")),
    path("shop-api/", include("chatbot.orders.urls")),
]

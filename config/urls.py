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
    path("metrics", operators.metrics, name="metrics"),
    path("", include("frontend.urls")),
    path("shop-api/", include("chatbot.orders.urls")),
]

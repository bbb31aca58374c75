"""The reference order API, mounted at /shop-api/ (docs/order-api.md)."""

from django.urls import path

from . import api

app_name = "orders"

urlpatterns = [
    path("customers", api.customers, name="customers"),
    path("customers/<str:customer_id>", api.customer_detail, name="customer"),
    path("customers/<str:customer_id>/orders", api.customer_orders, name="customer-orders"),
    path(
        "customers/<str:customer_id>/orders/<str:order_id>",
        api.customer_order,
        name="customer-order",
    ),
    path(
        "customers/<str:customer_id>/orders/<str:order_id>/cancel",
        api.order_cancel,
        name="order-cancel",
    ),
    path(
        "customers/<str:customer_id>/orders/<str:order_id>/address",
        api.order_address,
        name="order-address",
    ),
    path(
        "customers/<str:customer_id>/orders/<str:order_id>/return",
        api.order_return,
        name="order-return",
    ),
    path(
        "customers/<str:customer_id>/orders/<str:order_id>/exchange",
        api.order_exchange,
        name="order-exchange",
    ),
    path("items/<str:item_id>/variants", api.item_variants, name="item-variants"),
    path("shipping-options", api.shipping_options, name="shipping-options"),
    path("products", api.products, name="products"),
]

"""The shop's profile: its order-id forms, postcode formats, country, currency and the
store-policy values that replies quote. docs/shop-profile.md."""

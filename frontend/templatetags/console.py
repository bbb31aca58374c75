"""Template filters of the operator console."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def as_json(value: Any) -> str:
    """A release's configuration as the JSON an operator writes (not a Python dict);
    autoescaped by the template like any other string."""
    return json.dumps(value if value is not None else {}, ensure_ascii=False, sort_keys=True)

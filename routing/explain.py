"""Human-readable "why this tier" for the admin conversation view."""

from __future__ import annotations

from typing import Any


def _top(reason: dict[str, Any]) -> str:
    top = reason.get("top") or []
    return ", ".join(f"{intent} {float(score):.2f}" for intent, score in top)


def route_reason_text(
    *, tier: str, intent: str, confidence: float | None, reason: dict[str, Any] | None
) -> str:
    """One line: which rule fired, or the classifier's top classes and scores."""
    reason = reason or {}
    kind = reason.get("kind", "")
    head = f"{tier or '-'} · {intent or '-'}"
    if confidence is not None:
        head += f" · {confidence:.2f}"
    if kind == "rule":
        evidence = reason.get("match") or ", ".join(reason.get("keywords", []))
        detail = f"rule “{reason.get('rule')}” ({reason.get('rule_kind')})"
        if evidence:
            detail += f" matched “{evidence}”"
        if "density" in reason:
            detail += f", density {reason['density']}"
        if reason.get("matches", 1) > 1:
            detail += f", {reason['matches']} matches"
    elif kind == "classifier":
        detail = f"classifier: {_top(reason)}"
    elif kind == "clarify":
        why = reason.get("why", "")
        if why == "low_confidence":
            detail = (
                f"clarifying question: confidence below {reason.get('threshold')} "
                f"(best guess {reason.get('candidate')}); {_top(reason)}"
            )
        else:
            detail = f"clarifying question ({why})" + (
                f"; {_top(reason)}" if reason.get("top") else ""
            )
    elif kind:
        detail = ", ".join(f"{k}: {v}" for k, v in reason.items())
    else:
        return head if tier else ""
    return f"{head} — {detail}"

"""Gray release: named configurations (releases), sticky assignment of sessions to the
stable or the candidate release, the weight schedule, per-minute metrics, and the
guardrails that freeze and roll back a bad candidate. docs/releases.md explains it."""

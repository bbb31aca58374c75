"""Leave-one-set-out cross-validation of the handoff recogniser (routing/eval/handoff_cv.py)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from routing.eval.data import HANDOFF_READ_SETS, handoff_load
from routing.eval.handoff_cv import Parts, decide, figures, fold_parts, parts_of
from routing.handoff import handoff_scorer_train, training_samples
from routing.router import router_snapshot_get

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
POLICIES = ("router", "first", "gate")


class Command(BaseCommand):
    help = "Grouped (leave-one-set-out) cross-validation of the handoff recogniser."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", action="store_true", help="create the router data first")
        parser.add_argument("--json", type=Path, help="write the figures here")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["seed"]:
            from routing.seed import intents_seed

            intents_seed()
        started = time.perf_counter()
        live = router_snapshot_get()
        snapshot = replace(live, classifier=None)
        embed = None
        if settings.TIERDESK_ROUTER_EMBEDDINGS:
            from routing.classifier import examples_embed, message_embedding

            embed = examples_embed

            def embedding_of(text: str) -> Any:
                return message_embedding(text)
        else:

            def embedding_of(text: str) -> Any:
                return None

        groups = {path.stem: handoff_load(path) for path in HANDOFF_READ_SETS}
        # The scorer as shipped before this session's sets joined its training: its
        # examples and the seed negatives only.
        examples_only = handoff_scorer_train(training_samples(read_sets=False), embed=embed)
        report: dict[str, Any] = {"sets": {k: len(v) for k, v in groups.items()}, "folds": {}}
        pooled: list[Parts] = []
        folds: dict[str, list[Parts]] = {}
        baseline: list[Parts] = []
        for name, items in groups.items():
            parts = fold_parts(
                groups=groups,
                held_out=name,
                snapshot=snapshot,
                embed=embed,
                embedding_of=embedding_of,
            )
            pooled += parts
            folds[name] = parts
            baseline += [
                parts_of(i, snapshot=snapshot, scorer=examples_only, embedding_of=embedding_of)
                for i in items
            ]
            report["folds"][name] = {
                f"{policy}@{t}": figures(
                    parts, [decide(p, policy=policy, threshold=t) for p in parts]
                )
                for policy in POLICIES
                for t in THRESHOLDS
            }
            self.stdout.write(
                f"fold {name} ({len(items)}) done at {time.perf_counter() - started:.0f} s\n"
            )
        table: dict[str, Any] = {}
        for label, parts in (("cv", pooled), ("examples_only", baseline)):
            for policy in POLICIES:
                for t in THRESHOLDS:
                    gates = (0.0, 0.05, 0.1, 0.2) if policy == "gate" else (0.0,)
                    for g in gates:
                        said = [decide(p, policy=policy, threshold=t, gate=g) for p in parts]
                        key = f"{label} {policy}@{t}" + (f" gate {g}" if policy == "gate" else "")
                        table[key] = figures(parts, said)
                        self.stdout.write(f"{key}: {table[key]}\n")
        report["pooled"] = table
        report["nested"] = _nested(folds, self.stdout.write)
        report["errors"] = {
            f"{policy}@{t}": [
                [p.text, p.request, p.rule, p.after, p.score]
                for p in pooled
                if decide(p, policy=policy, threshold=t) != p.request
            ]
            for policy in POLICIES
            for t in (0.5, 0.7)
        }
        report["seconds"] = round(time.perf_counter() - started, 1)
        if options["json"]:
            options["json"].parent.mkdir(parents=True, exist_ok=True)
            options["json"].write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")


def _nested(folds: dict[str, list[Parts]], write: Any) -> dict[str, Any]:
    """The threshold and gate chosen on the other folds' decisions (the best accuracy
    with at most 2% false handoffs there), measured on the fold left out: the figure
    of choosing them by cross-validation, not on the data measured."""
    grid = [(t, g) for t in THRESHOLDS for g in (0.0, 0.05, 0.1, 0.2)]
    out: dict[str, Any] = {}
    for policy in POLICIES:
        chosen_parts: list[Parts] = []
        said: list[bool] = []
        picks = {}
        for name, parts in folds.items():
            rest = [p for other, ps in folds.items() if other != name for p in ps]

            def key(
                tg: tuple[float, float], rest: list[Parts] = rest, policy: str = policy
            ) -> tuple[bool, float]:
                f = figures(
                    rest, [decide(p, policy=policy, threshold=tg[0], gate=tg[1]) for p in rest]
                )
                return (f["false_rate"] <= 0.02, f["accuracy"])

            options = grid if policy == "gate" else [(t, 0.0) for t in THRESHOLDS]
            t, g = max(options, key=key)
            picks[name] = [t, g]
            chosen_parts += parts
            said += [decide(p, policy=policy, threshold=t, gate=g) for p in parts]
        out[policy] = {"picks": picks, **figures(chosen_parts, said)}
        write(f"nested {policy}: {out[policy]}\n")
    return out

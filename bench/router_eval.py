"""Evaluate the router on the labelled held-out set (``make eval-router``)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from bench.router_metrics import evaluate, handoff_evaluate, leaks, report_format
from bench.router_sets import HANDOFF_BLIND_SETS, HELDOUT_FILE
from routing.classifier_training import classifier_samples, classifier_train
from routing.handoff_scorer import training_samples
from routing.router import router_snapshot_get
from routing.training_data import HANDOFF_READ_SETS, TRAIN_FILE, handoff_load, labelled_load


class Command(BaseCommand):
    help = "Route the labelled held-out messages and report accuracy, P/R, confusion, tiers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--seed", action="store_true", help="create the default router data first"
        )
        parser.add_argument("--split", choices=["heldout", "train"], default="heldout")
        parser.add_argument("--json", type=Path, help="also write the full report here")
        parser.add_argument(
            "--figures",
            type=Path,
            help="merge the held-out and handoff figures into this report (router.json)",
        )
        parser.add_argument("--errors", type=int, default=25, help="misrouted examples to print")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["seed"]:
            from routing.seed import intents_seed

            intents_seed()
        items = labelled_load(HELDOUT_FILE if options["split"] == "heldout" else TRAIN_FILE)
        samples = classifier_samples()
        if options["split"] == "heldout":
            read = [(path, handoff_load(path)) for path in HANDOFF_READ_SETS]
            # A blind set written by someone else holds everyday messages that are
            # also training utterances ("我的订单到哪了", an order-status example): they
            # are left out of its figures and counted, not edited out of either side
            # (the set stays as written; the training data stays the product's).
            training_all = [text for text, _ in samples] + [text for text, _ in training_samples()]
            blind = []
            for path in HANDOFF_BLIND_SETS:
                loaded = handoff_load(path)
                known = set(leaks(heldout=loaded, training_texts=training_all))
                kept = [item for item in loaded if item.text not in known]
                if known:
                    self.stdout.write(
                        f"{path.name}: {len(loaded) - len(kept)} of {len(loaded)} lines are "
                        f"training utterances, left out of its figures: {sorted(known)}\n"
                    )
                blind.append((path, kept))
            # The blind sets' training utterances (the intents' and the handoff scorer's)
            # are left out above. The rest is checked against the intents' examples
            # only: the scorer trains on the read sets, and heldout.tsv
            # measures tiers (3 of its lines are among the scorer's: docs/routing.md).
            leaked = leaks(
                heldout=[*items, *(item for _, r in read for item in r)],
                training_texts=[text for text, _ in samples],
            )
            if leaked:
                raise CommandError(
                    f"{len(leaked)} held-out messages are training utterances (delete them "
                    f"from the intents' or the handoff scorer's examples): {leaked[:5]}"
                )
        # Train here (not the stored model) so the report has this data's training time.
        started = time.perf_counter()
        classifier = classifier_train(samples=samples)
        train_s = time.perf_counter() - started
        live = router_snapshot_get()
        snapshot = replace(live, classifier=classifier)
        result = evaluate(items=items, snapshot=snapshot, intent_tiers=live.intent_tiers)
        result["split"] = options["split"]
        result["training"] = {
            "examples": classifier.sample_count,
            "intents": len(classifier.intents),
            "seconds": round(train_s, 3),
        }
        self.stdout.write(
            f"router eval on {options['split']} ({len(items)} messages); classifier trained "
            f"on {classifier.sample_count} examples in {train_s:.2f} s\n"
        )
        self.stdout.write(report_format(result) + "\n")
        for error in result["errors"][: options["errors"]]:
            self.stdout.write(
                f"  [{error['language']}] {error['text']!r}: expected {error['expected']}, "
                f"got {error['got']} ({error['reason']}, {error['confidence']})\n"
            )
        if options["split"] == "heldout":
            # The blind sets first; then the read sets, which the scorer is trained on
            # (their blind estimate is `python -m bench.command handoff_cv`).
            for key, name, handoff_set in (
                *((path.stem, f"{path.name}, blind", b) for path, b in blind),
                *((path.stem, f"{path.name}, read, trained on", b) for path, b in read),
            ):
                handoff = handoff_evaluate(items=handoff_set, snapshot=snapshot)
                result[key] = handoff
                self.stdout.write(_handoff_line(name, handoff))
                for error in handoff["errors"][: options["errors"]]:
                    self.stdout.write(
                        f"  [{error['language']}] {error['text']!r}: expected "
                        f"{error['expected']}, got {error['got']} ({error['reason']})\n"
                    )
        if options["figures"] and options["split"] == "heldout":
            _figures_merge(options["figures"], result)
        if options["json"]:
            options["json"].parent.mkdir(parents=True, exist_ok=True)
            options["json"].write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")


def _handoff_line(name: str, handoff: dict[str, Any]) -> str:
    verdicts = ", ".join(f"{k}={'PASS' if v else 'MISS'}" for k, v in handoff["verdicts"].items())
    return (
        f"handoff ({name}): {handoff['requests_en']} EN + {handoff['requests_zh']} ZH "
        f"requests, {handoff['near_misses']} near-misses: accuracy={handoff['accuracy']} "
        f"recall_en={handoff['recall_en']} recall_zh={handoff['recall_zh']} "
        f"false_handoffs={handoff['false_handoff_rate']} decision ms "
        f"p50={handoff['decision_ms_p50']} p95={handoff['decision_ms_p95']}, of which the "
        f"handoff scorer step p95={handoff['handoff_step_ms_p95']}\n"
        f"  each part alone on the whole message, no vetoes: scorer recall="
        f"{handoff['scorer_alone_recall']} false={handoff['scorer_alone_false_handoff_rate']}; "
        f"rule recall={handoff['rule_alone_recall']} "
        f"false={handoff['rule_alone_false_handoff_rate']}\n"
        f"targets: {verdicts}\n"
    )


def _figures_merge(path: Path, result: dict[str, Any]) -> None:
    """The held-out set's and the handoff sets' figures into router.json (flat
    ``figures``, and the per-language/handoff details under ``heldout_eval``)."""
    report = json.loads(path.read_text()) if path.exists() else {}
    by_language = result["by_language"]
    figures = report.setdefault("figures", {})
    figures.update(
        {
            "heldout_messages_en": by_language["en"]["messages"],
            "heldout_messages_zh": by_language["zh"]["messages"],
            "heldout_tier_accuracy_en": by_language["en"]["tier_accuracy"],
            "heldout_tier_accuracy_zh": by_language["zh"]["tier_accuracy"],
            "heldout_intent_accuracy_en": by_language["en"]["accuracy"],
            "heldout_intent_accuracy_zh": by_language["zh"]["accuracy"],
            "heldout_oos_recall": result["overall"]["out_of_scope_recall"],
            "heldout_l1_l2_sent_to_l3": result["overall"]["l1_l2_sent_to_l3"],
            "heldout_complex_sent_to_l1": result["overall"]["complex_sent_to_l1"],
        }
    )
    # The read sets above, and every blind set of this run (HANDOFF_BLIND_SETS) under
    # its file's stem, so that a blind run's figures land in the report by themselves.
    blind = [path.stem for path in HANDOFF_BLIND_SETS]
    for key in ("handoff", "handoff_v2", "handoff_v3", "handoff_v4", "handoff_dev", *blind):
        handoff = result[key]
        for name in (
            "accuracy",
            "recall_en",
            "recall_zh",
            "false_handoff_rate",
            "scorer_alone_recall",
            "scorer_alone_false_handoff_rate",
            "rule_alone_recall",
            "rule_alone_false_handoff_rate",
            "decision_ms_p50",
            "decision_ms_p95",
            "handoff_step_ms_p95",
        ):
            figures[f"{key}_{name}"] = handoff[name]
    report["heldout_eval"] = {
        "split": result["split"],
        "training": result["training"],
        "overall": result["overall"],
        "by_language": by_language,
        "per_class": result["per_class"],
        "tier_confusion": result["tier_confusion"],
        "verdicts": result["verdicts"],
        "errors": result["errors"],
        "handoff": result["handoff"],
        "handoff_v2": result["handoff_v2"],
        "handoff_v3": result["handoff_v3"],
        "handoff_v4": result["handoff_v4"],
        "handoff_dev": {k: v for k, v in result["handoff_dev"].items() if k != "errors"},
        **{key: result[key] for key in blind},
    }
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")

"""The demo knowledge base and its truthfulness evaluation data agree with each other.

bench/sets/answers/demo/questions.jsonl keys `make eval-answers`: if a required fact of a
question were not in the section it cites, a correct bot would be scored wrong (and a
wrong one right). bench/sets/entailment/demo/pairs.jsonl is the entailment checker's test
set: its premises must be the KB's own text. The seed articles must speak to shoppers
(no agent instructions) and quote the shop's shipping options as the database has them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from chatbot.orders.seed import DEFAULT_SHIPPING_OPTIONS
from knowledge.ingest import document_sections
from knowledge.seed import ARTICLES, STORE_POLICY, article_path

SETS = Path(__file__).resolve().parents[2] / "bench" / "sets"
ANSWERS = SETS / "answers" / "demo"
ENTAILMENT = SETS / "entailment" / "demo"
QUESTION_KEYS = {"id", "lang", "split", "kind", "trap", "question", "expect", "contradict"}
QUESTION_KEYS |= {"doc", "section"}
PAIR_KEYS = {"id", "lang", "split", "premise", "hypothesis", "label", "kind", "doc", "section"}
TRAPS = {"negation", "number", "date", "exception", "only"}
PAIR_KINDS = {"paraphrase", "negation", "number", "date", "exception", "only", "unrelated"}
PAIR_KINDS |= {"partial"}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def articles() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((ANSWERS / "articles.json").read_text())
    return data


@pytest.fixture(scope="module")
def sections(articles: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """{document key: {section heading: section text}}, split by the ingestion code itself
    (the heading path "Title > Section" is cut to the section's own heading)."""
    texts = {key: article_path(rel).read_text() for key, _, _, rel, _ in [*ARTICLES, STORE_POLICY]}
    texts |= {a["key"]: a["text"] for a in articles}
    out: dict[str, dict[str, str]] = {}
    for key, text in texts.items():
        parsed = document_sections(data=text.encode(), source_format="markdown")
        out[key] = {s.heading.split(" > ")[-1]: s.text for s in parsed}
    return out


@pytest.fixture(scope="module")
def questions() -> list[dict[str, Any]]:
    return _jsonl(ANSWERS / "questions.jsonl")


@pytest.fixture(scope="module")
def pairs() -> list[dict[str, Any]]:
    return _jsonl(ENTAILMENT / "pairs.jsonl")


def _dev_share_ok(rows: list[dict[str, Any]], stratum: str) -> None:
    groups: dict[tuple[str, str], Counter[str]] = {}
    for row in rows:
        groups.setdefault((row["lang"], row[stratum]), Counter())[row["split"]] += 1
    for group, counts in groups.items():
        assert set(counts) <= {"dev", "test"}, group
        share = counts["dev"] / sum(counts.values())
        assert 0.3 <= share <= 0.5, (group, counts)


def test_questions_schema_counts_and_splits(questions: list[dict[str, Any]]) -> None:
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert set(q) == QUESTION_KEYS, q["id"]
        assert q["lang"] in {"en", "zh"} and q["question"].strip(), q["id"]
        assert q["kind"] in {"fact", "trap", "unanswerable"}, q["id"]
        assert (q["trap"] in TRAPS) == (q["kind"] == "trap"), q["id"]
        if q["kind"] != "trap":
            assert q["trap"] == "none", q["id"]
        for alternatives in q["expect"]:
            assert alternatives and all(a == a.lower() and a.strip() for a in alternatives)
        assert all(c == c.lower() and c.strip() for c in q["contradict"]), q["id"]
        if q["kind"] == "unanswerable":
            assert q["expect"] == [] and q["doc"] is None and q["section"] is None, q["id"]
        else:
            assert q["expect"] and q["doc"] and q["section"], q["id"]
    counts = Counter((q["lang"], q["kind"]) for q in questions)
    assert sum(n for (lang, _), n in counts.items() if lang == "en") >= 150
    assert sum(n for (lang, _), n in counts.items() if lang == "zh") >= 75
    assert counts["en", "trap"] + counts["zh", "trap"] >= 60
    assert counts["en", "unanswerable"] + counts["zh", "unanswerable"] >= 30
    assert counts["zh", "trap"] and counts["zh", "unanswerable"]
    _dev_share_ok(questions, "kind")


def test_every_required_fact_is_in_the_cited_section(
    questions: list[dict[str, Any]], sections: dict[str, dict[str, str]]
) -> None:
    for q in questions:
        if q["kind"] == "unanswerable":
            continue
        assert q["doc"] in sections, q["id"]
        assert q["section"] in sections[q["doc"]], (q["id"], q["section"])
        text = sections[q["doc"]][q["section"]].lower()
        for alternatives in q["expect"]:
            assert any(a in text for a in alternatives), (q["id"], alternatives)
        # A contradiction marker the article itself contains would flag correct answers.
        for marker in q["contradict"]:
            assert marker not in text, (q["id"], marker)


def test_the_evaluation_adds_its_own_articles(
    articles: list[dict[str, Any]], questions: list[dict[str, Any]]
) -> None:
    seed_keys = {key for key, *_ in [*ARTICLES, STORE_POLICY]}
    keys = [a["key"] for a in articles]
    assert 4 <= len(articles) <= 6 and len(set(keys)) == len(keys)
    assert not set(keys) & seed_keys
    assert {a["language"] for a in articles} == {"en", "zh"}
    for article in articles:
        assert set(article) == {"key", "title", "language", "text"}
        assert re.findall(r"^# (.+)$", article["text"], re.M) == [article["title"]]
    asked = Counter(q["doc"] for q in questions if q["kind"] == "trap")
    assert all(asked[key] for key in keys), asked


def test_entailment_pairs_schema_counts_and_premises(
    pairs: list[dict[str, Any]], sections: dict[str, dict[str, str]]
) -> None:
    assert len({p["id"] for p in pairs}) == len(pairs)
    for p in pairs:
        assert set(p) == PAIR_KEYS, p["id"]
        assert p["lang"] in {"en", "zh"} and p["hypothesis"].strip(), p["id"]
        assert p["label"] in {"entailed", "contradicted", "neutral"}, p["id"]
        assert p["kind"] in PAIR_KINDS, p["id"]
        assert (p["kind"] == "paraphrase") == (p["label"] == "entailed"), p["id"]
        section = " ".join(sections[p["doc"]][p["section"]].split())
        assert p["premise"] in section, p["id"]
    for lang, minimum in (("en", 200), ("zh", 100)):
        labels = Counter(p["label"] for p in pairs if p["lang"] == lang)
        total = sum(labels.values())
        assert total >= minimum
        assert 0.38 <= labels["entailed"] / total <= 0.52, labels
        assert 0.28 <= labels["contradicted"] / total <= 0.42, labels
        assert 0.14 <= labels["neutral"] / total <= 0.26, labels
    _dev_share_ok(pairs, "label")


AGENT_PHRASES = re.compile(
    r"\b(the user|the customer|agent|tool call|support checks|you should check its status"
    r"|confirm the order id|before taking)\b",
    re.I,
)


def test_seed_articles_speak_to_shoppers(sections: dict[str, dict[str, str]]) -> None:
    for key, _, title, relative, _ in [*ARTICLES, STORE_POLICY]:
        text = article_path(relative).read_text()
        assert re.findall(r"^# (.+)$", text, re.M) == [title], key
        assert not re.search(r"^#{3,} ", text, re.M), key
        assert not AGENT_PHRASES.search(text), (key, AGENT_PHRASES.search(text))
        for heading, body in sections[key].items():
            if heading == title:  # the lead paragraph under the title
                continue
            ends = len(re.findall(r"[.!?。！？](?=\s|$)", body))
            assert 1 <= ends <= 5, (key, heading, ends)


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


def test_shipping_articles_quote_the_shops_options(sections: dict[str, dict[str, str]]) -> None:
    english = sections["en-shipping"]["Shipping options"]
    chinese = sections["zh-shipping"]["配送方式"]
    for option in DEFAULT_SHIPPING_OPTIONS:
        assert f"{option.name} shipping costs ${_money(option.price)}" in english
        assert f"takes {option.days_min} to {option.days_max} business days" in english
        assert (
            f"{_money(option.price)}美元，{option.days_min}到{option.days_max}个工作日" in chinese
        )
        if option.free_over is not None:
            assert f"free on orders over ${option.free_over:.0f}" in english
            assert f"超过{option.free_over:.0f}美元免运费" in chinese


def test_the_grader_counts_only_a_real_abstention() -> None:
    """`make eval-answers` grades "abstained" only for a reply that says the shop doesn't
    know or offers a person, in both languages; the clarify menu asks again and is no
    abstention ("not sure" is in the English menu, so it is no abstention word)."""
    from bench.answers import grade
    from knowledge.answer import DONT_KNOW, NO_RULE

    seed = json.loads(
        (
            Path(__file__).resolve().parents[2] / "routing" / "seed_data" / "templates.json"
        ).read_text(encoding="utf-8")
    )
    question = {"expect": [["36 months"]], "contradict": ["never expire"]}
    for lang in ("en", "zh"):
        clarify = {"text": seed["dialogue"]["clarify"][lang], "done": {"actions": []}}
        assert grade(question, clarify) == "other", lang
        dont_know = {"text": DONT_KNOW[lang], "done": {"actions": []}}
        assert grade(question, dont_know) == "abstained", lang
        offer = {"text": seed["dialogue"]["l3_abstain"][lang], "done": {"actions": []}}
        assert grade(question, offer) == "abstained", lang
        # An order flow's reply to a general question it has no rule for.
        no_rule = f"{NO_RULE[lang]}\n\n{seed['dialogue']['ask_identity_also'][lang]}"
        assert grade(question, {"text": no_rule, "done": {"actions": []}}) == "abstained", lang


def test_the_probe_set_is_keyed_like_the_questions(
    questions: list[dict[str, Any]], sections: dict[str, dict[str, str]]
) -> None:
    """bench/sets/answers/demo/probe*.jsonl: further question sets beside the dev and
    test splits, each written from the articles before the changes it measured (split
    "probe", "probe2" ... "probe7"; which of them were tuned on is in
    bench/sets/answers/demo's history and docs/benchmarks.md). Same keys and the same
    grading contract as questions.jsonl, and no id shared with it."""
    names = ("probe", "probe2", "probe3", "probe4", "probe5", "probe6", "probe7")
    probes = [p for name in names for p in _jsonl(ANSWERS / f"{name}.jsonl")]
    assert not {p["id"] for p in probes} & {q["id"] for q in questions}
    assert len({p["id"] for p in probes}) == len(probes)
    for p in probes:
        assert set(p) == QUESTION_KEYS and p["split"] == p["id"].split("-")[0], p["id"]
        assert (p["trap"] in TRAPS) == (p["kind"] == "trap"), p["id"]
        if p["kind"] == "unanswerable":
            assert p["expect"] == [] and p["doc"] is None, p["id"]
            continue
        text = sections[p["doc"]][p["section"]].lower()
        for alternatives in p["expect"]:
            assert any(a in text for a in alternatives), (p["id"], alternatives)
        for marker in p["contradict"]:
            assert marker not in text, (p["id"], marker)

"""What the L2 answerer (``chatbot.answerers.l2``) plans: retrieval and the generation
request, built in one step.

``answer_plan`` runs inside the dialogue's worker thread. It retrieves the top
passages, keeps the relevant ones, packs them (and their documents' summaries) into a
prompt under a token budget, and returns the generation request with the citations.
Nothing between retrieval and generation is stored: the plan lives only in this turn.

With no passage clearing the relevance threshold the bot says it doesn't know and
offers the large tier (reply "yes") or a person; it never answers policy from the
model's own memory.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings

from inference.base import ChatMessage, GenerationRequest
from inference.sanitize import prompt_sanitize

from . import text as ktext
from .answer_decision import answerability_decision, decided_passages, decided_pointer
from .coverage import Coverage, character_share, question_coverage
from .grounding import passage_extract
from .retrieval import Passage, RetrievalResult, passages_retrieve

if TYPE_CHECKING:
    from .cards import CardMatch

logger = logging.getLogger(__name__)

SYSTEM = {
    "en": (
        "You are the customer-service assistant of an online clothing shop. Answer the "
        "shopper's question using only the facts in the passages from our help articles. "
        "Reuse the passages' wording; add no facts, numbers or promises of your own. "
        "Answer in English, in at most three short sentences, without mentioning the "
        "passages. If they do not answer the question, say you don't know."
    ),
    "zh": (
        "你是一家网上服装店的客服助手。只根据帮助文章中的段落回答顾客的问题，尽量沿用段落里的说法，"
        "不要添加段落里没有的事实、数字或承诺。用中文回答，不超过三句话，不要提到“段落”。"
        "如果段落没有回答这个问题，就说你不知道。"
    ),
}
LABELS = {
    "en": {"passages": "Passages", "question": "Question", "summary": "About"},
    "zh": {"passages": "段落", "question": "问题", "summary": "文章概要"},
}
# Few-shot completion prompt for a base model (the fast role): one worked example.
FEWSHOT = {
    "en": (
        "Shop answers, written only from the passage.\n\n"
        # The example is about nothing a shop's KB says (a made-up rule about
        # umbrellas): an example about a real topic leaked its facts into answers
        # ("gift cards never expire" against an article that says they do).
        "Passage: Umbrella repairs: Umbrellas are repaired free of charge within 12 months "
        "of purchase.\n"
        "Question: will you fix my umbrella for free after two years?\n"
        "Answer: Umbrellas are repaired free of charge within 12 months of purchase.\n\n"
    ),
    "zh": (
        "只根据段落写出的客服回答。\n\n"
        "段落：雨伞维修：雨伞自购买起12个月内免费维修。\n"
        "问题：雨伞买了两年还能免费修吗？\n"
        "回答：雨伞自购买起12个月内免费维修。\n\n"
    ),
}
DONT_KNOW = {
    "en": (
        "I couldn't find that in our help articles, so I won't guess. Reply \"yes\" and "
        "I'll pass your question to our senior assistant, or ask for a person and our "
        "support team will help."
    ),
    "zh": (
        "我在帮助文章里没有找到答案，所以不想乱猜。"
        "回复“是”，我会把问题转给高级助手；也可以要求转人工客服。"
    ),
}
MODEL_DOWN = {
    "en": "I can't write an answer right now, but this part of “{title}” should help: {snippet}",
    "zh": "我现在无法生成回答，不过《{title}》的这一段应该有帮助：{snippet}",
}
OFFER_ACTIONS = ["offer:L3", "offer:human"]
# A pointed reply offers a person (a "yes" next turn queues the shopper).
POINT_ACTIONS = ["offer:human"]


@dataclass
class KnowledgeAnswer:
    language: str
    # The reply when there is no generation (don't know), or what goes out if the
    # model fails mid-way (an excerpt of the best passage: grounded by construction).
    text: str
    generation: GenerationRequest | None = None
    role: str = "fallback"
    citations: list[dict[str, Any]] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    retrieval: dict[str, Any] = field(default_factory=dict)
    passages: list[Passage] = field(default_factory=list)
    # For the entailment guard (chatbot.answerers.reply_guards.EntailmentGuard): the
    # question, the cited passages' text and an extract to fall back on.
    grounding: dict[str, Any] | None = None
    # Served from an approved answer card (no generation): its id.
    card_id: int | None = None
    # The reply is a hedged quote of a section (``knowledge.pointing``), not an
    # answer: what was quoted and why (the ``done`` frame's and metadata's marker).
    pointed: dict[str, Any] | None = None

    @property
    def answered(self) -> bool:
        return self.generation is not None


def context_select(
    passages: list[Passage], *, budget: int, summaries: dict[int, str]
) -> tuple[list[Passage], list[tuple[str, str]]]:
    """Relevant passages in rank order while they fit the token budget (the first one
    always, trimmed if it must be); then the documents' summaries if room is left."""
    chosen: list[Passage] = []
    used = 0
    for passage in passages:
        if not passage.relevant:
            continue
        cost = ktext.estimate_tokens(passage.text) + 8
        if chosen and used + cost > budget:
            continue
        chosen.append(passage)
        used += cost
    extras: list[tuple[str, str]] = []
    seen: set[int] = set()
    for passage in chosen:
        summary = summaries.get(passage.document_id, "")
        if not summary or passage.document_id in seen:
            continue
        seen.add(passage.document_id)
        cost = ktext.estimate_tokens(summary) + 6
        if used + cost <= budget:
            extras.append((passage.title, summary))
            used += cost
    return chosen, extras


def passage_material(passage: Passage) -> str:
    """What a passage says, with the article title and section heading it sits under."""
    return passage.material


def other_goods(question: str, coverage: Coverage, passages: list[str]) -> list[str]:
    """The kinds of goods the question asks about that the passages leave out, when
    their rule is for another kind rather than for items in general: "how long is the
    warranty on the sneakers?" against the boots' warranty. Then the passages answer
    a question about something else (the question's other words are all there, so the
    coverage check alone let it through)."""
    from . import lexicon
    from .coverage import goods_covered
    from .terms import normalise, tokens

    text = normalise(" ".join(" ".join(passages).split()))
    stems = tokens(text)
    return [
        word
        for word in coverage.missing
        if lexicon.is_goods(word) and not goods_covered(word, text, stems)
    ]


def coverage_first(question: str, passages: list[Passage]) -> list[Passage]:
    """The passages with the ones holding more of the question's words first, rank
    order otherwise (a stable sort). The model answers from the first passage, the
    extract and an order flow's rule come from it: "what are the sneakers made of?"
    ranked the boots' materials above the section that names the sneakers. On the dev
    split the right section comes first for 82 of 101 answerable questions, against
    78 in rank order, and for none fewer. Ties go to a section before the article's
    lead, then to the passage whose own text (not its headings) holds more of the
    question's words."""
    shares = {id(p): question_coverage(question, [passage_material(p)]).share for p in passages}
    # Among those, the one whose own sentences hold more of them: every section's
    # heading path repeats the article's title, so an article's one-line intro ("What
    # you can change about an order, and when.") tied with the section that states the
    # rule, and "I want to cancel an order" was answered with the intro.
    # An article's lead (the text under its title, before the first section) describes
    # the article rather than stating a rule, so it goes after the sections that tie.
    own = {id(p): question_coverage(question, [p.text]).share for p in passages}
    # Then, in Chinese, the one sharing more of the question's characters: "T恤是纯棉的
    # 吗" finds 纯棉 in neither the sizes section nor the one on the T-shirt's
    # material, but only the material section has 棉.
    chars = {id(p): character_share(question, passage_material(p)) for p in passages}
    return sorted(
        passages,
        key=lambda p: (-shares[id(p)], p.heading == p.title, -own[id(p)], -chars[id(p)]),
    )


def _trim(text: str, budget: int) -> str:
    if ktext.estimate_tokens(text) <= budget:
        return text
    words = text.split()
    if ktext.has_cjk(text) and len(words) < 3:
        return text[: budget - 1] + "…"
    out: list[str] = []
    for word in words:
        out.append(word)
        if ktext.estimate_tokens(" ".join(out)) >= budget:
            break
    return " ".join(out) + " …"


def _passage_block(index: int, passage: Passage, budget: int) -> str:
    lead = passage.title + (f" › {passage.heading}" if passage.heading else "")
    return f"[{index}] {lead}: {_trim(' '.join(passage.text.split()), budget)}"


def prompt_build(
    *,
    question: str,
    language: str,
    passages: list[Passage],
    summaries: list[tuple[str, str]],
    chat: bool,
    budget: int,
) -> GenerationRequest:
    lang = language if language in SYSTEM else "en"
    labels = LABELS[lang]
    blocks = [_passage_block(i + 1, p, budget) for i, p in enumerate(passages)]
    about = [f"{labels['summary']} {title}: {summary}" for title, summary in summaries]
    question = prompt_sanitize(question)
    max_tokens = settings.TIERDESK_KB_ANSWER_MAX_TOKENS
    if chat:
        user = f"{labels['passages']}:\n" + "\n".join(about + blocks)
        user += f"\n\n{labels['question']}: {question}"
        return GenerationRequest(
            messages=(ChatMessage("system", SYSTEM[lang]), ChatMessage("user", user)),
            max_tokens=max_tokens,
            temperature=0.1,
            seed=11,
        )
    passage_text = " ".join(b.split(": ", 1)[-1] for b in blocks)
    if lang == "zh":
        prompt = f"{FEWSHOT[lang]}段落：{passage_text}\n问题：{question}\n回答："
    else:
        prompt = f"{FEWSHOT[lang]}Passage: {passage_text}\nQuestion: {question}\nAnswer:"
    return GenerationRequest(
        prompt=prompt, max_tokens=max_tokens, temperature=0.1, stop=("\n",), seed=11
    )


def _is_chat_role(role: str) -> bool:
    from inference.registry import get_backend

    backend = get_backend(role)
    return bool(getattr(backend, "chat", True))


def approved_card(*, question: str, language: str) -> CardMatch | None:
    """The approved card for the question, or None (blocking: may embed)."""
    from .cards import card_match

    try:
        return card_match(question=question, language=language)
    except Exception:
        # A broken card index (say, cards written by a newer deploy) must not take
        # retrieval down with it: answer from the passages.
        logger.exception("answer cards unavailable; answering from passages")
        return None


def coverage_refuses(question: str, chosen: list[Passage], explain: dict[str, Any]) -> bool:
    """Whether the relevant-looking passages leave out what the question is about ("is
    the leather on your boots ethically sourced?" against the boots' warranty), or state
    their rule for another kind of goods: then an answer or an extract of them would
    not answer the question. The verdict is recorded in ``explain``."""
    material = [passage_material(p) for p in chosen]
    coverage = question_coverage(question, material)
    explain["question_coverage"] = {
        "share": round(coverage.share, 3),
        "missing": coverage.missing,
        "answers": coverage.answers,
    }
    if not coverage.answers:
        return True
    if other := other_goods(question, coverage, material):
        explain["question_coverage"]["other_goods"] = other
        return True
    return False


def is_lead(passage: Passage) -> bool:
    """An article's lead: the text under its title, before the first section."""
    return passage.heading == passage.title


def judged_answer(
    question: str, chosen: list[Passage], language: str, explain: dict[str, Any]
) -> bool:
    """The coverage check refused the passages: does the judge model say the best one
    answers the question anyway (a shopper's own word for the thing asked)? Recorded
    in ``explain``; False when the judge is off (``TIERDESK_KB_JUDGE``)."""
    from .judge import answers_question, judge_role

    role = judge_role()
    if role is None:
        return False
    if is_lead(chosen[0]):
        # An article's lead describes the article ("Questions about our jackets.")
        # rather than stating a rule, yet the 1.5B said it answers "is the fleece jacket
        # warm enough for skiing at -20?" (dev en-183), and the reply was that sentence.
        explain["judge"] = {"role": role, "answers": False, "skipped": "article lead"}
        return False
    verdict = answers_question(question, chosen[:1], role=role)
    explain["judge"] = {"role": role, "answers": verdict, "chunk": chosen[0].chunk_id}
    return verdict


def _card_answer(match: CardMatch, language: str) -> KnowledgeAnswer:
    """An approved answer: the admin-reviewed text, no model on the hot path."""
    return KnowledgeAnswer(
        language=language,
        text=match.row.answer,
        citations=[match.citation()],
        retrieval={
            "answered": True,
            "card": {
                "id": match.row.card_id,
                "score": round(match.score, 3),
                "how": match.how,
                "question": match.row.question,
            },
        },
        card_id=match.row.card_id,
    )


def _disputed(
    question: str, sections: list[tuple[int, str]], language: str
) -> KnowledgeAnswer | None:
    """Two articles disagree on what the question asks (``knowledge.conflicts``): quote
    both and offer a person while it is open, never pick one; once the admin kept one,
    quote that one instead of the other."""
    from .conflicts import disputed_answer

    found = disputed_answer(question=question, sections=sections, language=language)
    if found is None:
        return None
    return KnowledgeAnswer(
        language=language,
        text=found.text,
        citations=list(found.citations),
        actions=list(found.actions),
        retrieval={"answered": True, "conflict": found.conflict_id},
    )


def pointed_answer(
    question: str, language: str, pointer: Any, why: str, explain: dict[str, Any]
) -> KnowledgeAnswer:
    """The hedged quote of the section ``pointer`` names, with its citation and the
    offer of a person (``knowledge.pointing``), marked ``pointed`` with ``why``."""
    from .pointing import pointed_text

    marker = pointer.record(why)
    return KnowledgeAnswer(
        language=language,
        text=pointed_text(question, language, pointer),
        actions=list(POINT_ACTIONS),
        citations=[pointer.passage.citation()],
        retrieval=explain | {"answered": False, "pointed": marker},
        passages=[pointer.passage],
        pointed=marker,
    )


def card_or_pointed(match: CardMatch, question: str, language: str) -> KnowledgeAnswer:
    """The card's answer, unless it states a branch of a rule that may not cover the
    case the question names (``knowledge.named_case``): then its section, quoted."""
    from .named_case import branch_mismatch
    from .pointing import pointer_at

    why = branch_mismatch(question, match.row.answer)
    if why:
        pointer = pointer_at(match.row.document_id, match.row.anchor)
        if pointer is not None:
            card = {"id": match.row.card_id, "score": round(match.score, 3), "mismatch": why}
            return pointed_answer(question, language, pointer, "other_case", {"card": card})
    return _card_answer(match, language)


def answer_plan(
    *,
    question: str,
    language: str,
    role: str | None = None,
    method: str = "hybrid",
    retrieval: RetrievalResult | None = None,
) -> KnowledgeAnswer:
    """Retrieve and build the L2 generation request in one step (blocking)."""
    lang = language if language in SYSTEM else "en"
    role = role or settings.TIERDESK_KB_ANSWER_ROLE
    match = approved_card(question=question, language=lang)
    if match is not None:
        if disputed := _disputed(question, [(match.row.document_id, match.row.anchor)], lang):
            return disputed
        return card_or_pointed(match, question, lang)
    result = retrieval or passages_retrieve(question=question, language=lang, method=method)
    summaries = _summaries()
    budget = settings.TIERDESK_KB_CONTEXT_TOKENS
    explain = result.explain()
    decision = answerability_decision(question, lang, explain)
    if decision is None:
        chosen, extras = context_select(result.passages, budget=budget, summaries=summaries)
        chosen = coverage_first(question, chosen)
    elif decision.candidate is None:
        return _dont_know(lang, explain, result.passages)
    else:
        chosen, extras = context_select(
            decided_passages(decision, result.passages), budget=budget, summaries=summaries
        )
    if disputed := _disputed(question, [(p.document_id, p.anchor) for p in chosen], lang):
        return disputed
    if (
        chosen
        and coverage_refuses(question, chosen, explain)
        and not judged_answer(question, chosen, lang, explain)
    ):
        chosen, extras = [], []
    if not chosen and decision is not None:
        return pointed_answer(question, lang, decided_pointer(decision), "not_confirmed", explain)
    if not chosen:
        return _not_found(question, lang, explain, result.passages)
    per_passage = max(60, budget // max(1, len(chosen)))
    generation = prompt_build(
        question=question,
        language=lang,
        passages=chosen,
        summaries=extras,
        chat=_is_chat_role(role),
        budget=per_passage,
    )
    best = chosen[0]
    extract = passage_extract(
        question, [p.text for p in chosen], max_chars=settings.TIERDESK_KB_EXTRACT_CHARS
    )
    fallback_text, pointed = _model_down(question, lang, best, extract)
    return KnowledgeAnswer(
        language=lang,
        text=fallback_text,
        pointed=pointed["marker"] if pointed["extract_other_case"] else None,
        generation=generation,
        role=role,
        citations=[p.citation() for p in chosen],
        retrieval=explain | {"answered": True, "context": [p.chunk_id for p in chosen]},
        passages=chosen,
        grounding={
            "question": question,
            "passages": [p.text for p in chosen],
            "extract": extract,
            # What goes out instead of a sentence stating a branch of a rule that may
            # not cover the question's named case (``EntailmentGuard``), or of the
            # extract when it states one (the guard's and a degraded turn's fallback).
            "pointed": pointed,
        }
        if settings.TIERDESK_KB_GROUNDING_GUARD
        else None,
    )


def _model_down(
    question: str, lang: str, best: Passage, extract: str
) -> tuple[str, dict[str, Any]]:
    """What goes out when the model can't write the answer, and the section's pointed
    quote. The passage snippet the model-down text shows would state another case's
    branch too: the section's quote goes out instead (marked only if it does)."""
    snippet = _trim(" ".join(best.text.split()), 80)
    pointed = _best_pointed(question, lang, best, extract)
    if pointed["extract_other_case"]:
        return str(pointed["text"]), pointed
    return MODEL_DOWN[lang].format(title=best.title, snippet=snippet), pointed


def _summaries() -> dict[int, str]:
    """Each document's summary, from the current index snapshot."""
    from .index import get_snapshot

    documents = get_snapshot().documents
    return {doc_id: part.summary for doc_id, part in documents.items() if part.summary}


def _not_found(
    question: str, lang: str, explain: dict[str, Any], passages: list[Passage]
) -> KnowledgeAnswer:
    """Nothing confirmed answers the question: one section clearly about it is quoted
    (``knowledge.pointing``) rather than saying nothing was found."""
    from .pointing import clearly_about

    pointer = clearly_about(question, lang)
    if pointer is not None:
        return pointed_answer(question, lang, pointer, "not_confirmed", explain)
    return _dont_know(lang, explain, passages)


def _dont_know(lang: str, explain: dict[str, Any], passages: list[Passage]) -> KnowledgeAnswer:
    return KnowledgeAnswer(
        language=lang,
        text=DONT_KNOW[lang],
        actions=list(OFFER_ACTIONS),
        retrieval=explain | {"answered": False},
        passages=passages,
    )


def _best_pointed(question: str, language: str, best: Passage, extract: str) -> dict[str, Any]:
    from .named_case import branch_mismatch
    from .pointing import pointed_text, pointer_for

    pointer = pointer_for(best)
    return {
        "text": pointed_text(question, language, pointer),
        "marker": pointer.record("other_case"),
        # The extract states another case's branch, or picks some of the sentences of
        # a rule whose branches name other cases (the "everywhere else" branch names
        # none, and is no safer for a place the rule doesn't list).
        "extract_other_case": bool(
            extract
            and (
                branch_mismatch(question, extract)
                or (
                    " ".join(extract.split()) != " ".join(best.text.split())
                    and branch_mismatch(question, best.text)
                )
            )
        ),
    }


# -- the rule beside an order flow -------------------------------------------------------------
# What an order flow says before its own step when a general question ("can you deliver
# on a Sunday?") finds no rule: that the articles don't say, rather than only asking who
# the shopper is as if the question were a request.
NO_RULE = {
    "en": "I couldn't find that in our help articles, so I won't guess; a person on our "
    "team can tell you.",
    "zh": "我在帮助文章里没有找到答案，所以不想乱猜；人工客服可以为您解答。",
}


@dataclass
class RuleAnswer:
    """What the knowledge base says about a message an order flow received."""

    text: str
    citations: list[dict[str, Any]]
    how: str  # "card" | "passage"


def rule_answer(*, question: str, language: str, judge: bool = False) -> RuleAnswer | None:
    """The shop's rule for a question an L1 order flow received ("can I still return my
    order after 30 days?", "how long does shipping take for my order?"): an approved
    card's answer, else the sentences of the best relevant passage when it holds what
    the question asks about (L2's coverage check; an extract: the article's own
    words). None when the knowledge base doesn't answer it; the flow then only does
    its own part. Blocking (embedding, search).

    No extra bar on the share of the question's words the passage holds: on the dev
    split's questions L2's check alone gives the right rule for 78 where a 75% bar
    gives 59 (81 with ``coverage_first``), quotes no contradicting sentence under
    either, and quotes a rule for the same one unanswerable question.

    ``judge``: where the coverage check refuses the passage, ask the answerability
    judge (``judged_answer``), as L2 does; the flow passes it for questions only, so
    a request to act on an order never waits for a model."""
    lang = language if language in SYSTEM else "en"
    match = approved_card(question=question, language=lang)
    if match is not None:
        return RuleAnswer(text=match.row.answer, citations=[match.citation()], how="card")
    result = passages_retrieve(question=question, language=lang)
    relevant = coverage_first(question, [p for p in result.passages if p.relevant])
    if not relevant:
        return None
    top = relevant[0]
    if not question_coverage(question, [passage_material(top)]).answers and not (
        judge and judged_answer(question, [top], lang, {})
    ):
        return None
    text = passage_extract(question, [top.text], max_chars=settings.TIERDESK_KB_EXTRACT_CHARS)
    return RuleAnswer(text=text, citations=[top.citation()], how="passage") if text else None

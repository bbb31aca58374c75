# The two commands: `make run` (the product, embedded default) and `make test` (the suite).
.PHONY: setup run test lint services

setup:
	bash scripts/setup.sh

run: setup
	bash scripts/run.sh

services:
	bash scripts/services.sh

test: setup services
	bash scripts/browser-setup.sh
	bash scripts/pytest.sh

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy .

#!/usr/bin/env bash
# Headless Chromium from Debian and playwright-core from npm (never a downloaded browser).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# assemblyscript builds the bot-check module (scripts/wasm-build.sh, tests/chatbot/botcheck).
if [ ! -d node_modules/playwright-core ] || [ ! -d node_modules/assemblyscript ]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent
fi

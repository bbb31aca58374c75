#!/usr/bin/env bash
# Headless Chromium from Debian and playwright-core from npm (never a downloaded browser).
set -euo pipefail
cd "$(dirname "$0")/.."
# A CJK font too: without one, screenshots (docs/*.png) show Chinese as empty boxes.
if [ ! -x /usr/bin/chromium ] || ! fc-list :lang=zh 2>/dev/null | grep -q .; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null
fi
# assemblyscript builds the bot-check module (scripts/wasm-build.sh, tests/chatbot/botcheck).
if [ ! -d node_modules/playwright-core ] || [ ! -d node_modules/assemblyscript ]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent
fi

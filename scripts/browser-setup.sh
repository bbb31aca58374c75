#!/usr/bin/env bash
# Headless Chromium from Debian and playwright-core from npm (never a downloaded browser).
set -euo pipefail
cd "$(dirname "$0")/.."
# A CJK font too: without one, screenshots (docs/*.png) show Chinese as empty boxes.
# nginx: the embedding test runs docs/deploy/nginx.conf in front of two Daphne processes
# (tests/browser/test_embed_nginx.py); the test starts and stops its own nginx, and the
# package's service is not started here.
if [ ! -x /usr/bin/chromium ] || ! fc-list :lang=zh 2>/dev/null | grep -q . || [ ! -x /usr/sbin/nginx ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei nginx >/dev/null
fi
# assemblyscript builds the bot-check module (scripts/wasm-build.sh, tests/chatbot/botcheck).
if [ ! -d node_modules/playwright-core ] || [ ! -d node_modules/assemblyscript ]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent
fi

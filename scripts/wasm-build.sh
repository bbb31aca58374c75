#!/usr/bin/env bash
# Builds the bot-check WebAssembly module from frontend/wasm/botcheck.ts with the
# AssemblyScript compiler pinned in package.json / package-lock.json. The same inputs
# give the same bytes (tests/chatbot/botcheck/test_wasm.py rebuilds and compares).
#   bash scripts/wasm-build.sh [OUT]   (default: frontend/static/tierdesk/botcheck.wasm)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-frontend/static/tierdesk/botcheck.wasm}
if [ ! -x node_modules/.bin/asc ]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent
fi
# --runtime stub: a bump allocator and no GC (the module allocates only its fixed
# buffers at start-up); -O3 --noAssert keeps it small; no source map, no debug names.
node_modules/.bin/asc frontend/wasm/botcheck.ts \
  --outFile "$out" --runtime stub -O3 --noAssert --converge --noExportMemory \
  --disable bulk-memory

#!/usr/bin/env bash
# Sets up (idempotent, fast when already done) and runs the whole test suite.
# This is the README's test command; CI runs exactly this.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
./scripts/setup.sh
source scripts/env.sh
# Set-up installed every dependency: a test that skips for a missing one fails instead (conftest.py).
export AFFORD_REQUIRE_ALL="${AFFORD_REQUIRE_ALL:-1}"
exec "$ROOT/.venv/bin/python" -m pytest -q "$@"

#!/usr/bin/env bash
# Create .venv-metaworld: a separate virtual environment with Meta-World 3.1.1 for the MT50 adapter
# (src/afford_eval/afford_eval/metaworld_bench.py).
#
# Why a second venv: metaworld pins mujoco==3.3.0 and pulls gymnasium; the main .venv carries the
# ROS 2 / robotics stack, whose mujoco and numpy must not be moved by a benchmark. The adapter
# imports only numpy/scipy and afford_core/afford_planner/afford_eval (by PYTHONPATH) besides
# metaworld, so this venv needs nothing else.
#
# Idempotent: when .venv-metaworld exists and imports metaworld/mujoco at the pinned versions
# (and the adapter's afford modules), nothing is installed. Otherwise the venv is (re)created with
# every package pinned (the versions that resolved on 2025-12 with Python 3.11), and the MT50(seed=0)
# task list is built once and cached inside the venv (~35 s), so later runs skip that build.
#
# Usage: bash scripts/setup_metaworld.sh      (PYTHON=python3.11 to choose the interpreter)
# Exit status: 0 ready; 1 with a message naming the step that failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-metaworld"
PY="${PYTHON:-python3}"
AFFORD_PATH="$ROOT/src/afford_core:$ROOT/src/afford_planner:$ROOT/src/afford_eval"

# Direct requirements (what the adapter uses) and everything they pull in, pinned together.
PINS=(
  metaworld==3.1.1
  mujoco==3.3.0
  gymnasium==1.4.0
  numpy==2.4.6
  scipy==1.17.1
  packaging==26.4
)
TRANSITIVE_PINS=(
  absl-py==2.5.1
  cloudpickle==3.1.3
  etils==1.15.0
  Farama-Notifications==0.0.6
  fsspec==2026.9.0
  glfw==2.11.0
  imageio==2.38.2
  pillow==13.0.0
  PyOpenGL==3.1.10
  typing_extensions==4.16.0
  zipp==4.1.2
)

say() { printf '[setup_metaworld] %s\n' "$*"; }
die() { printf '[setup_metaworld] ERROR: %s\n' "$*" >&2; exit 1; }

check_venv() {
  # Quiet check that the venv imports what the adapter needs at the pinned versions.
  [ -x "$VENV/bin/python" ] || return 1
  PYTHONPATH="$AFFORD_PATH" "$VENV/bin/python" - <<'EOF' >/dev/null 2>&1
import importlib.metadata as md
assert md.version("metaworld") == "3.1.1", md.version("metaworld")
assert md.version("mujoco") == "3.3.0", md.version("mujoco")
import metaworld, mujoco  # noqa: F401
import afford_planner.terms, afford_planner.selection, afford_eval.methods, afford_eval.stats  # noqa: F401
EOF
}

if check_venv; then
  say "$VENV already exists and imports metaworld 3.1.1 / mujoco 3.3.0: nothing to install"
else
  command -v "$PY" >/dev/null 2>&1 || die "no Python interpreter '$PY' (set PYTHON=...)"
  "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || die "$PY is $("$PY" --version 2>&1); Python >= 3.10 is needed"
  if [ -e "$VENV" ]; then
    say "$VENV exists but does not import the pinned packages: recreating it"
  fi
  say "creating $VENV with $("$PY" --version 2>&1)"
  "$PY" -m venv --clear "$VENV" || die "python -m venv failed (is the venv module installed?)"
  CONSTRAINTS="$(mktemp)"
  trap 'rm -f "$CONSTRAINTS"' EXIT
  printf '%s\n' "${PINS[@]}" "${TRANSITIVE_PINS[@]}" > "$CONSTRAINTS"
  say "installing ${PINS[*]} (transitive deps pinned: ${TRANSITIVE_PINS[*]})"
  "$VENV/bin/python" -m pip install --quiet "${PINS[@]}" -c "$CONSTRAINTS" \
    || die "pip install failed; the pins above may not resolve on this platform"
  check_venv || die "installed, but importing metaworld/mujoco or the afford modules failed; run: \
PYTHONPATH=$AFFORD_PATH $VENV/bin/python -c 'import metaworld, afford_eval.methods'"
  say "installed: $("$VENV/bin/python" -m pip freeze | tr '\n' ' ')"
fi

# Build (or validate) the cached MT50(seed=0) task list the adapter reads.
say "checking the cached MT50(seed=0) task list (first time: ~35 s to build)"
PYTHONPATH="$AFFORD_PATH" "$VENV/bin/python" -m afford_eval.metaworld_bench tasks --seed 0 \
  || die "building the MT50 task list failed"
say "ready: PYTHONPATH=$AFFORD_PATH $VENV/bin/python -m afford_eval.metaworld_bench run --out DIR"

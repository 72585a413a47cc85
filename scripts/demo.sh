#!/usr/bin/env bash
# The main job: set up (idempotent), then run the sentence-to-interaction spine on the
# simulated FR3 for one task per skill, printing each stage and writing a video per task.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
./scripts/setup.sh
source scripts/env.sh
OUT="${AFFORD_OUT:-$ROOT/out}"
SEED="${AFFORD_SEED:-1}"
mkdir -p "$OUT"
status=0
for sentence in \
    "pick up the scoop" \
    "put the banana on the plate" \
    "hang the mug on the rack" \
    "pour the paper cup into the bowl" \
    "open the drawer"; do
  video="$OUT/$(echo "$sentence" | tr ' ' '_').mp4"
  printf '\n=== %s (seed %s)\n' "$sentence" "$SEED"
  afford run "$sentence" --seed "$SEED" --video "$video" || status=1
done
printf '\nVideos are in %s\n' "$OUT"
exit $status

#!/usr/bin/env bash
# The main job: set up (idempotent), bring up the ROS 2 graph on the simulated FR3 (franky-sim
# serving the libfranka protocol on loopback, driven by the executor with franky), send task
# sentences through it with `afford task`, print every stage and the result, and take the
# graph down again.
#
#   ./scripts/demo.sh            the graph run (pick-and-place, then hang)
#   ./scripts/demo.sh --batch    also one task per skill in the batch world, with videos in out/
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
./scripts/setup.sh
source scripts/env.sh
OUT="${AFFORD_OUT:-$ROOT/out}"
mkdir -p "$OUT"
status=0

printf '\n=== bringing up the fr3_sim graph (log: %s)\n' "$OUT/graph.log"
afford bringup fr3_sim >"$OUT/graph.log" 2>&1 &
graph=$!
stop_graph() {
  if kill -0 "$graph" 2>/dev/null; then
    kill -INT "$graph" 2>/dev/null || true
    wait "$graph" 2>/dev/null || true
  fi
}
trap stop_graph EXIT

for task in "put the banana on the plate:1" "hang the mug on the rack:0"; do
  sentence="${task%:*}"
  seed="${task##*:}"
  printf '\n=== afford task "%s" --seed %s\n' "$sentence" "$seed"
  afford task "$sentence" --seed "$seed" --wait 180 || status=1
done
stop_graph
trap - EXIT
printf '\nThe graph is down (its log: %s)\n' "$OUT/graph.log"

if [ "${1:-}" = "--batch" ]; then
  SEED="${AFFORD_SEED:-1}"
  for sentence in \
      "pick up the scoop" \
      "put the banana on the plate" \
      "hang the mug on the rack" \
      "pour the paper cup into the bowl" \
      "open the drawer"; do
    video="$OUT/$(echo "$sentence" | tr ' ' '_').mp4"
    printf '\n=== afford run "%s" --seed %s (batch world)\n' "$sentence" "$SEED"
    afford run "$sentence" --seed "$SEED" --video "$video" || status=1
  done
  printf '\nVideos are in %s\n' "$OUT"
fi
exit $status

#!/usr/bin/env bash
# Runs the demo's --ci run once per seed, one after another, and sums up: the run time, the
# longest pause in training, the growth's times from the ask to 4 shards serving and to training
# resumed, and the outcome of each, then how many fell short or stalled.
# Usage: apps/demo/tools/repeat-ci.sh [first-seed] [runs]   (build first: see apps/demo/README.md)
# Exits 1 if any run fell short. Each run's output goes to <out>/seed-<n>.log.
set -u
first=${1:-1}
runs=${2:-20}
out=${OUT:-tmp/demo-repeat/$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$out"
failed=0
stalled=0
printf '%-6s %-8s %-10s %-10s %-10s %-10s %s\n' seed result seconds pause served resumed accuracy |
  tee "$out/summary.txt"
for ((seed = first; seed < first + runs; seed++)); do
  log="$out/seed-$seed.log"
  started=$(date +%s.%N)
  node dist/apps/demo/main.js --ci --seed "$seed" --out "$out/seed-$seed" >"$log" 2>&1
  code=$?
  took=$(echo "$(date +%s.%N) - $started" | bc)
  pause=$(sed -n 's/^Longest pause in training: \([0-9.]*\) s.*/\1/p' "$log")
  accuracy=$(sed -n 's/^Test accuracy \([0-9.]*\) %.*/\1/p' "$log")
  served=$(sed -n 's/^  grow .*: serving at [0-9]* after \([0-9.]*\) s.*/\1/p' "$log")
  resumed=$(sed -n 's/^  grow .*; training resumed after \([0-9.]*\) s.*/\1/p' "$log")
  result=ok
  if [ "$code" -ne 0 ]; then result=failed; failed=$((failed + 1)); fi
  if grep -q '(stalled' "$log"; then result=stalled; stalled=$((stalled + 1)); fi
  printf '%-6s %-8s %-10.1f %-10s %-10s %-10s %s\n' "$seed" "$result" "$took" "${pause:--}" \
    "${served:--}" "${resumed:--}" "${accuracy:--}" | tee -a "$out/summary.txt"
done
echo "$runs runs: $failed fell short, $stalled of them stalled; logs in $out" | tee -a "$out/summary.txt"
[ "$failed" -eq 0 ]

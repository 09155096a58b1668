#!/usr/bin/env bash
# Measures Tier 2 across the cores of one machine, on the lent device (16
# x86-64 cores, no Go, no redis-server, no network) or here at small scale:
#   1. BenchmarkTier2Device: one event's queued polls through 1 and 4
#      bin/queue processes on one redis-server, answers from memory off
#      (QUEUE_POLLS_FROM_STORE=true) and on; polls/s, the Redis main
#      thread's CPU, bin/queue's and the load generator's.
#   2. BenchmarkTier2Scale (make bench-scale) as the device's column.
# It needs CARRY/bundle.tgz from scripts/device-tier2-pack.sh and writes
# results.json (bench/results.json with both), the logs and the CPU profile
# of step 2 into OUT. Knobs (environment): LINE, CONNS, INSTANCES, DURATION,
# ROUNDS (step 1); SCALE=0 skips step 2, SCALE_FLAGS adds flags to it;
# DEVICE_BUDGET_S and SCALE_BUDGET_S bound each step. The whole run stays
# inside 6 minutes with the defaults.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry=${CARRY:-$root/.devcarry}
OUT=${OUT:-/tmp/devout}
mkdir -p "$OUT"
exec > >(tee "$OUT/device.log") 2>&1
start=$(date +%s)
say() { echo "[device-tier2 +$(( $(date +%s) - start ))s] $*"; }

bin=$(mktemp -d /tmp/vwr-device-bin.XXXXXX)
tar -C "$bin" -xzf "$carry/bundle.tgz" || { say "no $carry/bundle.tgz (scripts/device-tier2-pack.sh)"; exit 1; }
for b in redis-server redis-cli; do
  # Through the carried loader and libraries: the device's libc does not matter.
  printf '#!/bin/sh\nexec %s/lib/ld-linux-x86-64.so.2 --library-path %s/lib %s/%s.bin "$@"\n' "$bin" "$bin" "$bin" "$b" > "$bin/$b"
  chmod +x "$bin/$b"
done
export VWR_REDIS_SERVER=$bin/redis-server VWR_REDIS_CLI=$bin/redis-cli PATH=$bin:$PATH
export VWR_BENCH_COMMIT=$(cat "$bin/COMMIT")
say "commit $VWR_BENCH_COMMIT; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); kernel $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg); $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
"$bin/redis-server" --version || { say "carried redis-server does not start"; exit 1; }

# The benchmarks read and write bench/results.json of this tree.
cd "$root/bench"
say "step 1: BenchmarkTier2Device"
timeout "${DEVICE_BUDGET_S:-150}" "$bin/bench.test" -test.run '^$' -test.bench '^BenchmarkTier2Device$' -test.benchtime 1x -test.v -test.timeout 10m \
  -bench.device-queue "$bin/queue" -bench.device-instances "${INSTANCES:-1,4}" -bench.device-conns "${CONNS:-64,256}" \
  -bench.device-line "${LINE:-100000}" -bench.device-duration "${DURATION:-5s}" -bench.device-rounds "${ROUNDS:-1}"
rc1=$?
say "step 1 exit $rc1"
cp results.json "$OUT/results.json"
rc2=skipped
if [ "${SCALE:-1}" = 1 ]; then
  say "step 2: BenchmarkTier2Scale -bench.device"
  # shellcheck disable=SC2086
  timeout "${SCALE_BUDGET_S:-210}" "$bin/bench.test" -test.run '^$' -test.bench '^BenchmarkTier2Scale$' -test.benchtime 1x -test.v -test.timeout 10m \
    -bench.device ${SCALE_FLAGS:-}
  rc2=$?
  say "step 2 exit $rc2"
  cp results.json "$OUT/results.json"
  cp scale-cpu.out "$OUT/scale-cpu.out" 2>/dev/null
fi
say "done: step 1 $rc1, step 2 $rc2; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
[ "$rc1" = 0 ]

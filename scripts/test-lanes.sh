#!/usr/bin/env bash
# make test's runner: make targets in lanes side by side, each lane's
# targets in order. Usage: scripts/test-lanes.sh 'lane: target target…' …
# A step @other:target waits until lane other has finished that target
# (passed or failed), to keep two phases from running at the same time; a
# step nice runs the lane's later targets niced (work that has no deadline
# then takes the CPU the other lanes leave).
#
# Every line a lane prints goes to the terminal prefixed with its name, and
# unprefixed to test-output/lanes/<lane>.log. Each target's time is printed
# as it ends. A failed target ends its lane; the other lanes run on, so one
# run shows every failure. The summary gives each lane's result and time;
# the exit status is 1 when any lane failed, after the failed lanes' last
# lines, so a failure is at the end of the output whatever ran beside it,
# and then a few lines that name what failed.
# LANES_LOGS moves the logs, E2E_FLAKY_FILE the browser runner's flaky list
# (e2e/run.mjs reads it too).
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
logs=${LANES_LOGS:-test-output/lanes}
export E2E_FLAKY_FILE=${E2E_FLAKY_FILE:-test-output/e2e-flaky.txt}
rm -rf "$logs" "$E2E_FLAKY_FILE" && mkdir -p "$logs"

names=()
width=0
for spec in "$@"; do
  name=${spec%%:*}
  names+=("$name")
  ((${#name} > width)) && width=${#name}
done

# cpu_seconds reads `times` (two lines: the shell's, its children's user
# and system time) and prints the children's total in whole seconds.
cpu_seconds() {
  tail -n 1 | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%d\n", t + 0.5 }'
}

# lane runs its targets in order and leaves its status and time in files.
lane() {
  local name=$1 start=$SECONDS t0 target run=$make
  shift
  for target in "$@"; do
    t0=$SECONDS
    if [ "$target" = nice ]; then
      run="nice -n 10 $make"
      continue
    fi
    if [[ $target == @*:* ]]; then
      local other=${target%%:*} step=${target#*:}
      other=${other#@}
      echo "waiting for lane $other to finish make $step"
      until [ -f "$logs/$other.$step.over" ] || [ -f "$logs/$other.seconds" ]; do sleep 1; done
      echo "lane $other is past make $step: on ($((SECONDS - t0)) s)"
      continue
    fi
    # The subshell's `times` is the CPU its waited-for descendants used
    # (make, go test, Chromium, the emulators the tests start): the work
    # the two cores must fit into, whatever ran beside it.
    local failed=
    if ( $run --no-print-directory "$target"; rc=$?; times >"$logs/$name.$target.times"; exit $rc ); then :; else failed=1; fi
    cpu_seconds <"$logs/$name.$target.times" >"$logs/$name.$target.cpu" && rm -f "$logs/$name.$target.times"
    if [ -n "$failed" ]; then
      echo "FAILED: make $target ($((SECONDS - t0)) s, $(cat "$logs/$name.$target.cpu") CPU-s)"
      echo "make $target" >"$logs/$name.failed"
      echo $((SECONDS - start)) >"$logs/$name.seconds"
      return 1
    fi
    echo "done: make $target ($((SECONDS - t0)) s, $(cat "$logs/$name.$target.cpu") CPU-s)"
    touch "$logs/$name.$target.over"
  done
  echo $((SECONDS - start)) >"$logs/$name.seconds"
}

pids=()
for spec in "$@"; do
  name=${spec%%:*}
  prefix=$(printf "%-${width}s | " "$name")
  # shellcheck disable=SC2086 # the targets are words
  (lane "$name" ${spec#*:} 2>&1 | tee "$logs/$name.log" | sed -u "s/^/$prefix/") &
  pids+=($!)
done

for p in "${pids[@]}"; do wait "$p"; done

failed=()
echo "make test lanes:"
for name in "${names[@]}"; do
  secs=$(cat "$logs/$name.seconds" 2>/dev/null || echo "?")
  if [ -f "$logs/$name.failed" ]; then
    failed+=("$name")
    printf "  %-${width}s FAILED at %s after %s s (log: %s)\n" "$name" "$(cat "$logs/$name.failed")" "$secs" "$logs/$name.log"
  elif [ "$secs" = "?" ]; then
    failed+=("$name")
    printf "  %-${width}s did not finish (log: %s)\n" "$name" "$logs/$name.log"
  else
    printf "  %-${width}s ok in %s s\n" "$name" "$secs"
  fi
done
cpu=$(cat "$logs"/*.cpu 2>/dev/null | awk '{ t += $1 } END { print t + 0 }')
echo "  CPU used by every lane's targets: $cpu s ($(nproc) cores; $((SECONDS)) s wall)"
if [ -s "$E2E_FLAKY_FILE" ]; then
  echo "  FLAKY browser tests (failed once, passed alone; $E2E_FLAKY_FILE):"
  grep -E '^[^ ].* \([^ ]+:[0-9]+\)$' "$E2E_FLAKY_FILE" | sed 's/^/    /'
fi
for name in "${failed[@]}"; do
  echo
  echo "=== lane $name, last 60 lines ($logs/$name.log) ==="
  tail -n 60 "$logs/$name.log"
done
# Last, what failed in a few lines, for logs read from the end: the
# browser runner's FAILED TEST lines, go test's failed tests with their
# first lines of output, a panic, a failed package.
if [ ${#failed[@]} -gt 0 ]; then
  echo
  echo "=== what failed ==="
  for name in "${failed[@]}"; do
    awk -v lane="$name" '
      /^FAILED TEST: / { print lane ": " substr($0, 1, 400); next }
      /^ *--- FAIL: / { print lane ": " $0; more = 2; next }
      more > 0 && /^ +[^ ]/ { print lane ":   " substr($0, 1, 300); more--; next }
      { more = 0 }
      /^panic: / { print lane ": " substr($0, 1, 300) }
      /^FAIL\t/ { print lane ": " $0 }
    ' "$logs/$name.log" | head -n 30
    echo "$name: $(cat "$logs/$name.failed" 2>/dev/null || echo "did not finish")"
  done
fi
[ ${#failed[@]} -eq 0 ]

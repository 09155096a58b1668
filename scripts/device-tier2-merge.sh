#!/usr/bin/env bash
# Takes what scripts/device-tier2.sh brought back from the device (DIR:
# results.json, scale-cpu.out) into this tree's bench/results.json:
# tier2Device and tier2Scale.device only, the rest of the file as it is
# here; the device column's pprofTop from `go tool pprof -top` on the
# profile beside the test binary scripts/device-tier2-pack.sh kept
# (/tmp/vwr-device/bench.test), since the device has no Go. Then renders
# BENCHMARKS.md from it.
set -euo pipefail
dir=$1
root=$(cd "$(dirname "$0")/.." && pwd)
top=""
if [ -f "$dir/scale-cpu.out" ]; then
  top=$(mktemp)
  go tool pprof -top -nodecount 10 /tmp/vwr-device/bench.test "$dir/scale-cpu.out" > "$top"
fi
python3 - "$dir/results.json" "$root/bench/results.json" "$top" <<'PY'
import json, sys
dev, here, top = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(dev))
r = json.load(open(here))
if d.get("tier2Device"):
    r["tier2Device"] = d["tier2Device"]
scale = d.get("tier2Scale", {}).get("device")
if scale:
    if top:
        lines, on = [], False
        for l in open(top).read().split("\n"):
            on = on or "flat%" in l
            if on and l.strip():
                lines.append(l)
        scale["pprofTop"] = lines[:11]
    r["tier2Scale"]["device"] = scale
with open(here, "w") as f:
    # As Go's encoding/json writes it (HTML characters escaped).
    out = json.dumps(r, indent=2, ensure_ascii=False)
    f.write(out.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e") + "\n")
PY
cd "$root" && go test -count=1 ./bench -run TestBenchmarksMD -update

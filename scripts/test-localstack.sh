#!/usr/bin/env bash
# make test-localstack: the AWS suites (make test-aws) against LocalStack,
# run on this host without Docker from .venv-localstack, for every service
# it serves itself (SQS, Secrets Manager), and against moto for DynamoDB
# (LocalStack's DynamoDB is DynamoDB Local, a download under the vendor's own
# terms), through the SDK's per-service endpoint AWS_ENDPOINT_URL_DYNAMODB.
# Both run on free loopback ports and are stopped at the end. LS_VENV is the
# LocalStack venv make testenv installed (the Makefile exports it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ls_python=${LS_VENV:?run through make test-localstack}/bin/python
moto=$root/.venv/bin/moto_server
for f in "$ls_python" "$moto"; do
  [ -x "$f" ] || { echo "test-localstack: $f is missing; run make testenv" >&2; exit 1; }
done
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ls_port=$(free_port)
moto_port=$(free_port)
work=$(mktemp -d)
pids=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop EXIT

# LocalStack in host mode: OVERRIDE_IN_DOCKER=0 keeps it from assuming it
# runs in its container image; its state lives in the work directory.
(cd "$work" && exec env OVERRIDE_IN_DOCKER=0 LOCALSTACK_CLI=0 GATEWAY_LISTEN="127.0.0.1:$ls_port" \
  SERVICES=sqs,secretsmanager EAGER_SERVICE_LOADING=1 SKIP_INFRA_DOWNLOADS=1 DISABLE_EVENTS=1 \
  LOCALSTACK_VOLUME_DIR="$work/volume" FILESYSTEM_ROOT="$work/fs" TMPDIR="$work" \
  "$ls_python" -m localstack.runtime.main) >"$work/localstack.log" 2>&1 &
pids+=($!)
"$moto" -H 127.0.0.1 -p "$moto_port" >"$work/moto.log" 2>&1 &
pids+=($!)

ready() {
  python3 - "$1" <<'PY'
import json, sys, urllib.request
try:
    h = json.load(urllib.request.urlopen(sys.argv[1] + "/_localstack/health", timeout=2))
except Exception:
    sys.exit(1)
sys.exit(0 if all(h.get("services", {}).get(s) in ("available", "running") for s in ("sqs", "secretsmanager")) else 1)
PY
}
deadline=$((SECONDS + 120))
until ready "http://127.0.0.1:$ls_port"; do
  if [ $SECONDS -ge $deadline ] || ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "test-localstack: LocalStack did not come up on 127.0.0.1:$ls_port; its log:" >&2
    tail -40 "$work/localstack.log" >&2
    exit 1
  fi
  sleep 1
done
echo "test-localstack: LocalStack $("$ls_python" -c 'import importlib.metadata as m; print(m.version("localstack-core"))') on 127.0.0.1:$ls_port (SQS, Secrets Manager), moto on 127.0.0.1:$moto_port (DynamoDB)"
make -C "$root" --no-print-directory test-aws AWS_ENDPOINT_URL="http://127.0.0.1:$ls_port" AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$moto_port"

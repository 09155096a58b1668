#!/usr/bin/env bash
# Packs what scripts/device-tier2.sh needs on the lent device machine (16
# x86-64 cores, no Go, no redis-server, no network) into DEST/bundle.tgz:
# bin/queue (CGO_ENABLED=0), the bench package's test binary (go test -c),
# redis-server and redis-cli with every shared library ldd names, the
# loader included (they run through it, so the device's own libc does not
# matter), and the commit they were built from. DEST defaults to
# .devcarry in the repository root, which .git/info/exclude must ignore;
# the device call names it in carry. Run from a checkout of the commit to
# measure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/.devcarry}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$dest"
cd "$root"
commit=$(git rev-parse --short HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then commit=$commit+changes; fi
echo "device-tier2-pack: building at $commit"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$stage/queue" ./services/queue/cmd/queue
CGO_ENABLED=0 go test -c -trimpath -o "$stage/bench.test" ./bench/
# The same test binary stays here (outside what travels) for `go tool
# pprof` on the profile the device brings back.
mkdir -p /tmp/vwr-device && cp "$stage/bench.test" /tmp/vwr-device/bench.test
for b in redis-server redis-cli; do
  p=$(command -v "$b") || { echo "device-tier2-pack: $b not found (make testenv)" >&2; exit 1; }
  cp -L "$p" "$stage/$b.bin"
  ldd "$p" | awk '/=>/ {print $3} /ld-linux/ {print $1}' | while read -r l; do cp -L "$l" "$stage/lib/"; done
done
echo "$commit" > "$stage/COMMIT"
tar -C "$stage" -czf "$dest/bundle.tgz" .
ls -la "$dest"

#!/usr/bin/env bash
# Prints the path of a Python >= 3.12 with venv, for LocalStack (make
# testenv): one on PATH if the machine has it, else CPython 3.13 built once
# from Debian's own source package (trixie's python3.13; this Debian has
# only 3.11, and only Debian's archive and PyPI are reachable) into
# VWR_PYTHON_HOME (default ~/.cache/vwr/python3.13), where later clones
# find it. Building needs root for apt-get (the deb-src entry, the build
# dependencies) and takes two to four minutes on two cores (longer beside
# make test's other lanes: it runs niced).
set -euo pipefail

usable() { "$1" -c 'import sys, venv, ensurepip, ssl, sqlite3, ctypes; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }

for p in python3.14 python3.13 python3.12; do
  if path=$(command -v "$p") && usable "$path"; then echo "$path"; exit 0; fi
done
home=${VWR_PYTHON_HOME:-$HOME/.cache/vwr/python3.13}
if usable "$home/bin/python3.13"; then echo "$home/bin/python3.13"; exit 0; fi

mkdir -p "$(dirname "$home")"
exec 9>"$home.lock"
flock 9 # another make testenv may be building it
if usable "$home/bin/python3.13"; then echo "$home/bin/python3.13"; exit 0; fi

if [ "$(id -u)" != 0 ]; then
  echo "python312: no Python >= 3.12 here; install one (python3.12 or python3.13 with venv) or run make testenv as root to build it" >&2
  exit 1
fi
echo "python312: building CPython 3.13 from Debian's source package into $home (once per machine)" >&2
src=/etc/apt/sources.list.d/vwr-trixie-src.sources
if [ ! -f "$src" ]; then
  # Source packages only: nothing installed from trixie.
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$src"
fi
deps="build-essential dpkg-dev libssl-dev zlib1g-dev libffi-dev libsqlite3-dev libbz2-dev liblzma-dev uuid-dev libreadline-dev libncurses-dev libexpat1-dev"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(
  # make testenv-apt may be installing beside this build (make test's lanes):
  # one apt-get at a time.
  lock=${APT_LOCK:-$HOME/.cache/vwr/apt.lock}
  mkdir -p "$(dirname "$lock")"
  exec 8>"$lock"
  flock 8
  apt-get update -qq >&2
  missing=""
  for d in $deps; do dpkg -s "$d" >/dev/null 2>&1 || missing="$missing $d"; done
  if [ -n "$missing" ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null; fi
  cd "$work" && apt-get source --download-only -qq python3.13 >&2
)
tarball=$(ls "$work"/python3.13_*.orig.tar.xz | head -1)
tar -xJf "$tarball" -C "$work"
cd "$work"/Python-3.13*/
./configure --prefix="$home" --disable-test-modules >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log" >&2; exit 1; }
# Niced: inside make test the tests beside it come first (nothing waits
# for this build until test-localstack, the last step of its lane).
nice -n 10 make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -20 "$work/install.log" >&2; exit 1; }
usable "$home/bin/python3.13" || { echo "python312: the build in $home lacks venv, ssl, sqlite3 or ctypes" >&2; exit 1; }
echo "$home/bin/python3.13"

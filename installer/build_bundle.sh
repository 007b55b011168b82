#!/usr/bin/env bash
# Build the one-folder application bundle (PyInstaller, CPU torch): a folder that runs
# latent-synth without any Python installation on the target machine.
#
#   installer/build_bundle.sh [--out DIR] [--wheelhouse KIT/wheels] [--archive]
#
#   --out DIR         work folder (default: ${TMPDIR:-/tmp}/latent-synth-bundle); the bundle is
#                     DIR/dist/latent-synth/ with the programs latent-synth and latent-synth-gui
#   --wheelhouse DIR  install the app's dependencies from this folder only (e.g. the wheels/ of a
#                     kit made by build_wheelhouse.sh); otherwise from the index, still pinned and
#                     hash-checked by installer/requirements.lock
#   --archive         also write DIR/latent-synth-VERSION-PLATFORM-bundle.tar.gz (.zip on Windows)
#                     and its .sha256
#
# Needs Python 3.11 (PYTHON=...) and, unless PyInstaller is in the wheelhouse, the network for
# PyInstaller itself (installed into a private build venv, never the project's). Build on the
# oldest Linux you support (glibc), or on Windows (Git Bash) for a Windows bundle: PyInstaller
# does not cross-compile. Run `DIR/dist/latent-synth/latent-synth --help` to check the result.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
OUT="${TMPDIR:-/tmp}/latent-synth-bundle"
WHEELHOUSE=""
ARCHIVE=0
PYINSTALLER="${PYINSTALLER_SPEC:-pyinstaller==6.22.3}"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --wheelhouse) WHEELHOUSE="$(cd "$2" && pwd)"; shift 2 ;;
    --archive) ARCHIVE=1; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build_bundle.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || { echo "build_bundle.sh: needs Python 3.11 (set PYTHON=...)" >&2; exit 2; }
VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -1)"
START=$(date +%s)
mkdir -p "$OUT"

# 1. A private build venv with exactly the locked dependencies.
if [ -x "$OUT/venv/bin/python" ]; then VPY="$OUT/venv/bin/python"; else
  "$PYTHON" -m venv "$OUT/venv"; VPY="$OUT/venv/bin/python"; fi
[ -x "$VPY" ] || VPY="$OUT/venv/Scripts/python.exe"
SELECTED="$OUT/lock-native.txt"
"$VPY" "$HERE/lockfile.py" select --target native "$HERE/requirements.lock" > "$SELECTED"
if [ -n "$WHEELHOUSE" ]; then
  "$VPY" -m pip install --quiet --no-index --find-links "$WHEELHOUSE" --require-hashes -r "$SELECTED"
else
  "$VPY" -m pip install --quiet --require-hashes -r "$SELECTED"
fi
"$VPY" -m pip install --quiet "$PYINSTALLER"
# The app itself (for its metadata; the spec analyses the sources in the repo), built from a
# copy so that no build/ or *.egg-info is left in the repository.
rm -rf "$OUT/src" && mkdir -p "$OUT/src"
cp -r "$ROOT/pyproject.toml" "$ROOT/README.md" "$OUT/src/"
for pkg in engine desktop resources; do [ -d "$ROOT/$pkg" ] && cp -r "$ROOT/$pkg" "$OUT/src/"; done
"$VPY" -m pip install --quiet --no-deps "$OUT/src"
echo "build venv ready ($(( $(date +%s) - START )) s)"

# 2. PyInstaller, one-folder.
T0=$(date +%s)
"$VPY" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$OUT/dist" --workpath "$OUT/work" "$HERE/latent-synth.spec"
BUNDLE="$OUT/dist/latent-synth"
echo "PyInstaller: $(( $(date +%s) - T0 )) s; bundle $BUNDLE: $(du -sh "$BUNDLE" | cut -f1)"

# 3. Smoke test of the frozen CLI.
EXE="$BUNDLE/latent-synth"; [ -x "$EXE" ] || EXE="$BUNDLE/latent-synth.exe"
"$EXE" --version
"$EXE" --help > /dev/null

if [ "$ARCHIVE" = 1 ]; then
  PLAT="$("$VPY" -c 'import sysconfig; print(sysconfig.get_platform().replace("-", "_"))')"
  NAME="latent-synth-$VERSION-$PLAT-bundle"
  if [ "${PLAT#win}" != "$PLAT" ]; then
    (cd "$OUT/dist" && "$VPY" -c "import shutil; shutil.make_archive('../$NAME', 'zip', '.', 'latent-synth')")
    (cd "$OUT" && sha256sum "$NAME.zip" > "$NAME.zip.sha256")
  else
    tar -C "$OUT/dist" -czf "$OUT/$NAME.tar.gz" latent-synth
    (cd "$OUT" && sha256sum "$NAME.tar.gz" > "$NAME.tar.gz.sha256")
  fi
  echo "archive: $OUT/$NAME.*"
fi
echo "done in $(( $(date +%s) - START )) s"

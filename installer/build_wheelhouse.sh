#!/usr/bin/env bash
# Build the offline installation kit(s) of latent-synth. Run on a CONNECTED machine (Linux or
# WSL) with Python 3.11; the result is copied into the air-gapped environment.
#
#   installer/build_wheelhouse.sh [--target linux_x86_64|win_amd64|all] [--out DIR]
#                                 [--cuda cu126] [--update-lock] [--archive]
#
# For each target it makes OUT/latent-synth-VERSION-TARGET/ holding
#   wheels/             every wheel of installer/requirements.lock for that target
#                       (--only-binary=:all:, checked against the lock's hashes) + the app's wheel
#   requirements.lock   the lock itself (pip evaluates its markers on the target)
#   vcruntime/          (Windows) Microsoft's Visual C++ 14.44 runtime DLLs (redistributable),
#                       from the hash-pinned msvc-runtime wheel; install.ps1 places them beside
#                       torch's DLLs when the workstation's runtime is missing or older than 14.40
#   install.sh / uninstall.sh (Linux), install.ps1 / uninstall.ps1 (Windows), lockfile.py
#   README-admins.md    for the administrators of the secure environment
#   sbom.cdx.json       CycloneDX 1.5: every package, version, licence and wheel hash
#   SHA256SUMS          of every file above (`sha256sum -c SHA256SUMS`)
# and with --archive a .tar (Linux) / .zip (Windows) of that folder plus its .sha256.
#
# Environment:
#   PYTHON           Python 3.11 used to run pip and build the app's wheel (default: python3.11
#                    or python3)
#   TORCH_INDEX_URL  where the Linux CPU torch comes from (default
#                    https://download.pytorch.org/whl/cpu; set it empty to skip)
#   FIND_LINKS       extra folders/URLs of wheels, space-separated (e.g. /opt/wheels)
#   CUDA_INDEX_URL   with --cuda TAG: default https://download.pytorch.org/whl/TAG
# Nothing downloaded is trusted without a hash: the lock's sha256 for every dependency; the
# CUDA variant (--cuda) is hashed at download time into cuda-TAG/requirements-cuda.lock.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
TARGET=all
OUT="$ROOT/dist/offline"
CUDA=""
UPDATE_LOCK=0
ARCHIVE=0

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --target) TARGET="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --cuda) CUDA="$2"; shift 2 ;;
    --update-lock) UPDATE_LOCK=1; shift ;;
    --archive) ARCHIVE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build_wheelhouse.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$TARGET" in
  all) TARGETS="linux_x86_64 win_amd64" ;;
  linux_x86_64|win_amd64) TARGETS="$TARGET" ;;
  *) echo "build_wheelhouse.sh: --target must be linux_x86_64, win_amd64 or all" >&2; exit 2 ;;
esac

if [ -z "${PYTHON:-}" ]; then
  PYTHON="$(command -v python3.11 || command -v python3)"
fi
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
  echo "build_wheelhouse.sh: needs Python 3.11 (set PYTHON=...); the kit is for CPython 3.11" >&2; exit 2; }
TORCH_INDEX_URL="${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}"
# Visual C++ runtime for Windows (torch's c10.dll imports MSVCP140.dll and MSVCP140_ATOMIC_WAIT.dll
# and ships neither). The wheel holds the redistributable DLLs; it is unpacked, not installed.
MSVC_RUNTIME="msvc-runtime==14.44.35112"
MSVC_RUNTIME_SHA256="aba7fbe71897d25ed53fbb7f391e9f50289378a8a9ae218ba18530c663448391"
FIND_LINKS="${FIND_LINKS:-}"
VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -1)"
LOCK="$HERE/requirements.lock"
START=$(date +%s)

WORK="$(mktemp -d "${TMPDIR:-/tmp}/latent-synth-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# A private tool environment: a current pip (and uv for --update-lock); never the project's venv.
"$PYTHON" -m venv "$WORK/tools"
TPY="$WORK/tools/bin/python"
"$TPY" -m pip install --quiet --upgrade pip
SRC_ARGS=()
for fl in $FIND_LINKS; do SRC_ARGS+=(--find-links "$fl"); done

if [ "$UPDATE_LOCK" = 1 ]; then
  "$TPY" -m pip install --quiet uv
  LOCK_ARGS=(--uv "$WORK/tools/bin/uv")
  for fl in $FIND_LINKS; do LOCK_ARGS+=(--find-links "$fl"); done
  [ -n "$TORCH_INDEX_URL" ] && LOCK_ARGS+=(--torch-index "$TORCH_INDEX_URL")
  "$TPY" "$HERE/lockfile.py" compile "${LOCK_ARGS[@]}"
fi
"$TPY" "$HERE/lockfile.py" check "$LOCK" --pyproject "$ROOT/pyproject.toml" || {
  echo "build_wheelhouse.sh: the lock does not match pyproject.toml; run with --update-lock" >&2; exit 1; }

# The app's own wheel, built from a clean copy of the sources (keeps build/ out of the repo).
mkdir -p "$WORK/src" "$WORK/appwheel"
cp -r "$ROOT/pyproject.toml" "$ROOT/README.md" "$WORK/src/"
for pkg in engine desktop resources; do
  [ -d "$ROOT/$pkg" ] && cp -r "$ROOT/$pkg" "$WORK/src/"
done
find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +
"$TPY" -m pip wheel --quiet --no-deps --wheel-dir "$WORK/appwheel" "$WORK/src"
APP_WHEEL="$(ls "$WORK"/appwheel/*.whl)"

for T in $TARGETS; do
  KIT="$OUT/latent-synth-$VERSION-$T"
  echo "== $T -> $KIT"
  rm -rf "$KIT"
  mkdir -p "$KIT/wheels"
  PLATS=()
  for p in $("$TPY" -c "import sys; sys.path.insert(0, '$HERE'); import lockfile; print(' '.join(lockfile.TARGETS['$T']['pip_platforms']))"); do
    PLATS+=(--platform "$p")
  done
  "$TPY" "$HERE/lockfile.py" select --target "$T" "$LOCK" > "$WORK/lock-$T.txt"
  IDX=()
  if [ "$T" = linux_x86_64 ] && [ -n "$TORCH_INDEX_URL" ]; then IDX=(--extra-index-url "$TORCH_INDEX_URL"); fi
  # --no-deps + --require-hashes: exactly the locked files, each checked against its hash.
  "$TPY" -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
      --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none "${PLATS[@]}" \
      "${IDX[@]}" "${SRC_ARGS[@]}" --dest "$KIT/wheels" -r "$WORK/lock-$T.txt"
  cp "$APP_WHEEL" "$KIT/wheels/"

  if [ -n "$CUDA" ] && [ "$T" = linux_x86_64 ]; then
    # Optional GPU variant: torch and its nvidia-* wheels (several GB) from PyTorch's CUDA index.
    CDIR="$KIT/cuda-$CUDA"
    mkdir -p "$CDIR/wheels"
    "$TPY" -m pip download --quiet --only-binary=:all: --python-version 3.11 --implementation cp \
        --abi cp311 --abi abi3 --abi none "${PLATS[@]}" \
        --index-url "${CUDA_INDEX_URL:-https://download.pytorch.org/whl/$CUDA}" \
        --dest "$CDIR/wheels" "torch==2.13.0"
    "$TPY" "$HERE/lockfile.py" cudalock "$CDIR/wheels" --lock "$LOCK" -o "$CDIR/requirements-cuda.lock"
    # keep only the wheels that the CUDA lock names (the rest are in wheels/ already)
    for w in "$CDIR"/wheels/*.whl; do
      n="$(basename "$w" | cut -d- -f1 | tr 'A-Z_.' 'a-z--')"
      grep -qi "^$n==" "$CDIR/requirements-cuda.lock" || rm -f "$w"
    done
  fi

  cp "$LOCK" "$HERE/lockfile.py" "$HERE/README-admins.md" "$KIT/"
  if [ "$T" = win_amd64 ]; then
    cp "$HERE/install.ps1" "$HERE/uninstall.ps1" "$KIT/"
    echo "$MSVC_RUNTIME --hash=sha256:$MSVC_RUNTIME_SHA256" > "$WORK/msvc.txt"
    rm -rf "$WORK/msvc" && mkdir -p "$WORK/msvc" "$KIT/vcruntime"
    "$TPY" -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
        --python-version 3.11 --implementation cp --abi cp311 --platform win_amd64 \
        --dest "$WORK/msvc" -r "$WORK/msvc.txt"
    "$TPY" - "$WORK"/msvc/msvc_runtime-*.whl "$KIT/vcruntime" <<'PY'
import sys, zipfile, pathlib
wheel, dest = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as zf:
    for name in zf.namelist():  # the Scripts/ copy holds every DLL, vcruntime140*.dll included
        base = name.rsplit("/", 1)[-1]
        if "/data/Scripts/" in name and base.lower().endswith(".dll"):
            (dest / base).write_bytes(zf.read(name))
        elif name.endswith("dist-info/licenses/LICENSE"):
            (dest / "LICENSE-msvc-runtime.txt").write_bytes(zf.read(name))
PY
    for dll in msvcp140.dll msvcp140_atomic_wait.dll vcruntime140.dll vcruntime140_1.dll; do
      [ -f "$KIT/vcruntime/$dll" ] || { echo "build_wheelhouse.sh: $dll missing from $MSVC_RUNTIME" >&2; exit 1; }
    done
  else
    cp "$HERE/install.sh" "$HERE/uninstall.sh" "$KIT/"
    chmod +x "$KIT/install.sh" "$KIT/uninstall.sh"
  fi
  "$TPY" "$HERE/lockfile.py" sbom "$KIT/wheels" -o "$KIT/sbom.cdx.json" --app-version "$VERSION"
  "$TPY" "$HERE/lockfile.py" sums "$KIT" > /dev/null
  (cd "$KIT" && sha256sum --quiet -c SHA256SUMS)
  echo "   $(ls "$KIT/wheels" | wc -l) wheels, $(du -sh "$KIT" | cut -f1)"

  if [ "$ARCHIVE" = 1 ]; then
    NAME="$(basename "$KIT")"
    if [ "$T" = win_amd64 ]; then
      (cd "$OUT" && rm -f "$NAME.zip" && "$TPY" -c "import shutil; shutil.make_archive('$NAME', 'zip', '.', '$NAME')")
      (cd "$OUT" && sha256sum "$NAME.zip" > "$NAME.zip.sha256")
    else
      (cd "$OUT" && tar -cf "$NAME.tar" "$NAME" && sha256sum "$NAME.tar" > "$NAME.tar.sha256")
    fi
  fi
done
echo "done in $(( $(date +%s) - START )) s: $OUT"

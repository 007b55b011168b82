#!/usr/bin/env bash
# Install latent-synth for the current user from this offline kit (no network, no admin rights).
#
#   ./install.sh [--prefix DIR] [--python PYTHON3.11] [--bin-dir DIR] [--no-launcher] [--cuda TAG]
#
#   --prefix DIR     where the program goes (default: ~/.local/share/latent-synth)
#   --python PY      a Python 3.11 interpreter (default: python3.11, else python3 if it is 3.11)
#   --bin-dir DIR    where the `latent-synth` command goes (default: ~/.local/bin)
#   --no-launcher    no command wrapper and no desktop menu entry
#   --cuda TAG       use the CUDA torch from cuda-TAG/ of the kit instead of the CPU build
#
# Steps: verify SHA256SUMS; create a virtual environment in PREFIX/venv from wheels/ alone
# (pip --no-index --require-hashes); build matplotlib's font cache in PREFIX/mplconfig; add
# BIN_DIR/latent-synth and ~/.local/share/applications/latent-synth.desktop. Running it again
# replaces the previous installation. Undo with ./uninstall.sh (same --prefix).
set -euo pipefail

KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}"
PREFIX="$DATA_HOME/latent-synth"
BIN_DIR="$HOME/.local/bin"
PY=""
LAUNCHER=1
CUDA=""

die() { echo "install.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX="$2"; shift 2 ;;
    --python) PY="$2"; shift 2 ;;
    --bin-dir) BIN_DIR="$2"; shift 2 ;;
    --no-launcher) LAUNCHER=0; shift ;;
    --cuda) CUDA="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
case "$PREFIX" in /*) ;; *) PREFIX="$(pwd)/$PREFIX" ;; esac
case "$BIN_DIR" in /*) ;; *) BIN_DIR="$(pwd)/$BIN_DIR" ;; esac
START=$(date +%s)

# 1. Integrity: every file of the kit against SHA256SUMS, and no unlisted wheel.
echo "[1/5] verifying SHA256SUMS"
[ -f "$KIT/SHA256SUMS" ] || die "SHA256SUMS is missing from $KIT"
(cd "$KIT" && sha256sum --quiet --strict -c SHA256SUMS) \
  || die "checksum verification FAILED: the kit is corrupted or was modified; nothing was installed"
for w in "$KIT"/wheels/*.whl; do
  grep -q " wheels/$(basename "$w")\$" "$KIT/SHA256SUMS" \
    || die "wheels/$(basename "$w") is not listed in SHA256SUMS; nothing was installed"
done

# 2. Python 3.11
if [ -z "$PY" ]; then
  PY="$(command -v python3.11 || command -v python3 || true)"
fi
[ -n "$PY" ] || die "no Python 3.11 found; pass --python /path/to/python3.11"
"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || die "$PY is Python $("$PY" -c 'import sys; print(sys.version.split()[0])'); this kit needs 3.11 (--python)"
"$PY" -c 'import venv, ensurepip' 2>/dev/null \
  || die "$PY has no venv/ensurepip module (Debian/Ubuntu: package python3.11-venv)"

# pip sees only this kit: no config files, no PIP_* variables, no index.
for v in $(env | sed -n 's/^\(PIP_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export PIP_CONFIG_FILE=/dev/null PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
unset PYTHONPATH PYTHONHOME

echo "[2/5] creating $PREFIX/venv"
mkdir -p "$PREFIX"
rm -rf "$PREFIX/venv" "$PREFIX/mplconfig"
"$PY" -m venv "$PREFIX/venv"
VPY="$PREFIX/venv/bin/python"

echo "[3/5] installing from the kit (offline)"
PIPI=("$VPY" -m pip install --no-index --find-links "$KIT/wheels" --only-binary=:all: --no-cache-dir --quiet)
if [ -z "$CUDA" ]; then
  "${PIPI[@]}" --require-hashes -r "$KIT/requirements.lock"
else
  CDIR="$KIT/cuda-$CUDA"
  [ -f "$CDIR/requirements-cuda.lock" ] || die "this kit has no CUDA variant $CUDA (no $CDIR)"
  "$VPY" "$KIT/lockfile.py" select --target linux_x86_64 --drop torch "$KIT/requirements.lock" > "$PREFIX/lock-no-torch.txt"
  "${PIPI[@]}" --require-hashes --no-deps -r "$PREFIX/lock-no-torch.txt"
  "${PIPI[@]}" --require-hashes --no-deps --find-links "$CDIR/wheels" -r "$CDIR/requirements-cuda.lock"
  rm -f "$PREFIX/lock-no-torch.txt"
fi
APP_WHEEL="$(ls "$KIT"/wheels/latent_synth-*.whl | head -1)"
"${PIPI[@]}" --no-deps "$APP_WHEEL"
"$VPY" -m pip check > /dev/null || die "installed packages are inconsistent: $("$VPY" -m pip check)"

echo "[4/5] building matplotlib's font cache"
# Every start of the venv's Python (the wrapper, the .desktop entry, or venv/bin/latent-synth
# run directly) uses PREFIX/mplconfig unless MPLCONFIGDIR is already set.
SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
MPLDIR="$PREFIX/mplconfig"
mkdir -p "$MPLDIR"
"$VPY" - "$SITE/latent_synth_env.pth" "$MPLDIR" <<'EOF'
import sys
pth, mpldir = sys.argv[1], sys.argv[2]
with open(pth, "w", encoding="utf-8") as f:
    f.write(f"import os; os.environ.setdefault('MPLCONFIGDIR', {mpldir!r})\n")
EOF
MPLCONFIGDIR="$MPLDIR" MPLBACKEND=Agg "$VPY" -c 'import matplotlib.font_manager as fm; fm._load_fontmanager(try_read_cache=False)'
ls "$MPLDIR"/fontlist-*.json > /dev/null 2>&1 || die "matplotlib's font cache was not written to $MPLDIR"
"$PREFIX/venv/bin/latent-synth" --version > /dev/null || die "latent-synth does not start; see above"

MANIFEST="$PREFIX/installed-files.txt"
: > "$MANIFEST"
if [ "$LAUNCHER" = 1 ]; then
  echo "[5/5] adding the launcher"
  mkdir -p "$BIN_DIR"
  cat > "$BIN_DIR/latent-synth" <<EOF
#!/bin/sh
# latent-synth launcher (installed by install.sh; removed by uninstall.sh)
MPLCONFIGDIR="\${MPLCONFIGDIR:-$MPLDIR}"
export MPLCONFIGDIR
exec "$PREFIX/venv/bin/latent-synth" "\$@"
EOF
  chmod 755 "$BIN_DIR/latent-synth"
  echo "$BIN_DIR/latent-synth" >> "$MANIFEST"

  APPS="$DATA_HOME/applications"
  mkdir -p "$APPS"
  ICON="$("$VPY" - <<'EOF' 2>/dev/null || true
from importlib import resources
try:
    root = resources.files("resources")
    hits = sorted(p for p in root.iterdir() if p.name.startswith(("icon", "latent-synth")) and p.name.endswith((".png", ".svg")))
    print(hits[0] if hits else "")
except Exception:
    pass
EOF
)"
  {
    echo "[Desktop Entry]"
    echo "Type=Application"
    echo "Name=latent-synth"
    echo "Comment=Privacy-protected synthetic copies of patient tables"
    # %f: "Open with latent-synth" (or a file dropped on the launcher) passes one table, which
    # the wizard opens loaded; with no file the wizard opens empty.
    echo "Exec=\"$BIN_DIR/latent-synth\" %f"
    echo "MimeType=text/csv;text/tab-separated-values;application/vnd.openxmlformats-officedocument.spreadsheetml.sheet;application/vnd.ms-excel;application/x-spss-sav;application/x-stata-dta;application/x-sas-data;application/x-sas-xport;application/vnd.apache.parquet;"
    [ -n "$ICON" ] && echo "Icon=$ICON"
    echo "Terminal=false"
    echo "Categories=Science;MedicalSoftware;Office;"
    echo "X-latent-synth-prefix=$PREFIX"
  } > "$APPS/latent-synth.desktop"
  echo "$APPS/latent-synth.desktop" >> "$MANIFEST"
  command -v update-desktop-database > /dev/null && update-desktop-database "$APPS" 2>/dev/null || true
  case ":$PATH:" in *":$BIN_DIR:"*) ;; *)
    echo "note: $BIN_DIR is not on your PATH; add it (e.g. in ~/.profile) or run $BIN_DIR/latent-synth" ;;
  esac
else
  echo "[5/5] no launcher (--no-launcher): run $PREFIX/venv/bin/latent-synth"
fi
cp "$KIT/uninstall.sh" "$PREFIX/uninstall.sh" 2>/dev/null && chmod +x "$PREFIX/uninstall.sh" || true
if [ -f "$KIT/sbom.cdx.json" ]; then cp "$KIT/sbom.cdx.json" "$PREFIX/"; fi

echo "installed latent-synth $("$PREFIX/venv/bin/latent-synth" --version | awk '{print $2}') in $PREFIX ($(du -sh "$PREFIX" | cut -f1), $(( $(date +%s) - START )) s)"
echo "the wizard needs Qt's X11 libraries; see README-admins.md if it does not open"

#!/usr/bin/env bash
# Remove a per-user latent-synth installation made by install.sh.
#
#   ./uninstall.sh [--prefix DIR]
#
# Removes the launcher files listed in PREFIX/installed-files.txt (only those that install.sh
# wrote) and PREFIX itself (the virtual environment and matplotlib's cache). Your data and the
# outputs you wrote elsewhere are never touched.
set -euo pipefail

PREFIX="${XDG_DATA_HOME:-$HOME/.local/share}/latent-synth"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "uninstall.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$PREFIX" in /*) ;; *) PREFIX="$(pwd)/$PREFIX" ;; esac

if [ ! -d "$PREFIX/venv" ] && [ ! -f "$PREFIX/installed-files.txt" ]; then
  echo "uninstall.sh: no latent-synth installation in $PREFIX (use --prefix)" >&2
  exit 1
fi
if [ -f "$PREFIX/installed-files.txt" ]; then
  while IFS= read -r f; do
    [ -n "$f" ] || continue
    # only files that still belong to this installation
    if [ -f "$f" ] && grep -q -e "$PREFIX" -e "latent-synth launcher" "$f"; then
      rm -f "$f" && echo "removed $f"
    fi
  done < "$PREFIX/installed-files.txt"
fi
rm -rf "$PREFIX/venv" "$PREFIX/mplconfig"
rm -f "$PREFIX/installed-files.txt" "$PREFIX/uninstall.sh" "$PREFIX/sbom.cdx.json"
rmdir "$PREFIX" 2>/dev/null || echo "left $PREFIX (it holds other files)"
echo "latent-synth removed from $PREFIX"

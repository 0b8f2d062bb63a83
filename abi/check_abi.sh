#!/usr/bin/env bash
# The ABI check (ctest test_abi, label host) and its baseline (docs/reliability.md, "ABI").
#
#   check_abi.sh            compare the library built here with abi/libfusedops.abi
#   check_abi.sh --update   rewrite abi/libfusedops.abi from the library built here
#                           (the abi_baseline target: cmake --build build --target abi_baseline)
#
# Both sides are abidw's view of the library restricted to the public header: the exported
# functions and the types of include/ they reach (--headers-dir --drop-private-types
# --exported-interfaces-only), without source locations, so neither depends on where the tree
# or the build lives. abidiff compares them with abi/suppressions.abignore, which allows what
# the header promises to be compatible: fields appended to the struct_size-versioned structs.
#
# The check fails, printing abidiff's report, on any change but added functions: a function
# removed or changed, a public type changed (layout, enumerator values, ...). Added functions
# pass, with the report and a reminder to record them in the baseline. Exits 77 (skipped)
# without abigail-tools.
#
# Environment: SOURCE_DIR (the checkout), ABI_LIB (the library with debug info: tests/abi/ in
# the build), LIB (libfusedops.so as shipped, whose exports ABI_LIB must match), and
# optionally ABIDW, ABIDIFF, NM.
set -uo pipefail
: "${ABIDW:=abidw}" "${ABIDIFF:=abidiff}" "${NM:=nm}"
for v in SOURCE_DIR ABI_LIB LIB; do
  [ -n "${!v:-}" ] || { echo "check_abi.sh: $v is not set" >&2; exit 2; }
done
SOURCE_DIR=$(cd "$SOURCE_DIR" && pwd)
baseline="$SOURCE_DIR/abi/libfusedops.abi"
suppressions="$SOURCE_DIR/abi/suppressions.abignore"
if ! command -v "$ABIDW" >/dev/null 2>&1 || ! command -v "$ABIDIFF" >/dev/null 2>&1; then
  echo "abidw/abidiff not found (apt-get install abigail-tools): ABI check skipped"
  exit 77
fi

# The library abidiff reads must export what the shipped one exports (same sources, flags and
# version script, plus -g): otherwise the comparison would be about another library.
exports() { "$NM" -D --defined-only "$1" | awk '{print $NF}' | sort; }
if ! diff <(exports "$LIB") <(exports "$ABI_LIB") >/dev/null; then
  echo "FAIL: $ABI_LIB does not export what $LIB exports:"
  diff <(exports "$LIB") <(exports "$ABI_LIB")
  exit 1
fi

# abidw's view of $1, written to $2.
describe() {
  local tmp="$2.tmp"
  if ! "$ABIDW" --headers-dir "$SOURCE_DIR/include" --drop-private-types \
      --exported-interfaces-only --drop-undefined-syms --no-corpus-path --no-comp-dir-path \
      --no-show-locs --out-file "$tmp" "$1"; then
    echo "FAIL: abidw could not read $1" >&2
    rm -f "$tmp"
    return 1
  fi
  if ! grep -q "<function-decl name='tile_" "$tmp"; then
    echo "FAIL: abidw found no tile_* function with debug info in $1 (built without -g?)" >&2
    rm -f "$tmp"
    return 1
  fi
  sed "s#path='$SOURCE_DIR/#path='#" "$tmp" >"$2" && rm -f "$tmp"
}

if [ "${1:-}" = "--update" ]; then
  describe "$ABI_LIB" "$baseline" || exit 1
  echo "wrote $baseline ($(exports "$LIB" | wc -l) exported functions): review its diff and commit it"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
describe "$ABI_LIB" "$work/current.abi" || exit 1
report=$("$ABIDIFF" --suppressions "$suppressions" --no-show-locs \
  "$baseline" "$work/current.abi" 2>&1)
rc=$?
# abidiff's status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible change.
if ((rc & 3)); then
  echo "FAIL: abidiff could not compare (status $rc):"
  echo "$report"
  exit 1
fi
if ((rc == 0)); then
  if grep -q "filtered out" <<<"$report"; then
    echo "compatible ABI change against abi/libfusedops.abi (allowed by abi/suppressions.abignore:"
    echo "fields appended to versioned structs, or enumerators before a *_COUNT_ sentinel):"
    echo "$report"
    echo "Record it: cmake --build <build> --target abi_baseline, and commit abi/libfusedops.abi."
  else
    echo "ABI unchanged against abi/libfusedops.abi ($(exports "$LIB" | wc -l) exported functions)"
  fi
  exit 0
fi
# Some change: allowed only if every summary line counts nothing removed and nothing changed.
bad=$(grep -E "changes summary:" <<<"$report" |
  grep -vE ": 0 Removed(, 0 Changed( \([0-9]+ filtered out\))?)?, [0-9]+ Added" || true)
if ((rc & 8)) || [ -n "$bad" ]; then
  echo "FAIL: incompatible ABI change against abi/libfusedops.abi:"
  echo "$report"
  echo
  echo "Restore compatibility; or, for a deliberate break, bump TILE_VERSION_MAJOR (the SONAME)"
  echo "and rewrite the baseline: cmake --build <build> --target abi_baseline"
  exit 1
fi
echo "compatible ABI change against abi/libfusedops.abi (functions added; passes):"
echo "$report"
echo
echo "Record it: cmake --build <build> --target abi_baseline, and commit abi/libfusedops.abi."
exit 0

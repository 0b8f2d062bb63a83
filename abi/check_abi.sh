#!/usr/bin/env bash
# test_abi (ctest, label host): the ABI of the library built here against the committed
# baseline abi/libfusedops.abi. Fails, printing abidiff's report, on an incompatible change
# (a removed or changed function, a changed public type layout or enum); a compatible change
# (a function added) passes with the report and a reminder to update the baseline
# (docs/reliability.md, "ABI"). Exits 77 (skipped) without abidiff (apt-get install
# abigail-tools).
#
# Environment: ABIDIFF, NM, BASELINE (abi/libfusedops.abi), HEADERS (include/), ABI_LIB (the
# library with debug info that abidiff reads), LIB (libfusedops.so as shipped).
set -uo pipefail
: "${ABIDIFF:=abidiff}" "${NM:=nm}"
for v in BASELINE HEADERS ABI_LIB LIB; do
  [ -n "${!v:-}" ] || { echo "check_abi.sh: $v is not set" >&2; exit 2; }
done
if ! command -v "$ABIDIFF" >/dev/null 2>&1; then
  echo "abidiff not found (apt-get install abigail-tools): ABI check skipped"
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

report=$("$ABIDIFF" --no-corpus-path --fail-no-debug-info --drop-private-types \
  --headers-dir2 "$HEADERS" "$BASELINE" "$ABI_LIB" 2>&1)
rc=$?
# abidiff's status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible change.
if ((rc & 3)); then
  echo "FAIL: abidiff could not compare (status $rc):"
  echo "$report"
  exit 1
fi
if ((rc & 8)); then
  echo "FAIL: incompatible ABI change against $BASELINE:"
  echo "$report"
  echo
  echo "Restore compatibility, or, for a deliberate break, bump TILE_VERSION_MAJOR and update"
  echo "the baseline (docs/reliability.md, \"ABI\")."
  exit 1
fi
if ((rc & 4)); then
  echo "compatible ABI change against $BASELINE (passes):"
  echo "$report"
  echo
  echo "Record it: cmake --build <build> --target abi_baseline, and commit abi/libfusedops.abi."
  exit 0
fi
echo "ABI unchanged against $BASELINE ($(exports "$LIB" | wc -l) exported functions)"
exit 0

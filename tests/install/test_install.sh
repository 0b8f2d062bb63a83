#!/usr/bin/env bash
# test_install (ctest, label host): installs this build into a temporary prefix and uses it
# the way a user would.
#   1. cmake --install BUILD_DIR --prefix P; checks the layout (header, versioned shared library
#      with its SONAME and links, static library, CMake package, pkg-config file, CLI, docs).
#   2. The installed CLI runs and finds the installed library (its RPATH).
#   3. tests/consumer/cmake: find_package(fusedops CONFIG) and fusedops::fusedops (and
#      fusedops::fusedops_static, and as C++); built and run.
#   4. tests/consumer/consumer.c compiled by cc with `pkg-config --cflags --libs fusedops`; run.
#   5. examples/ configured with find_package against P and built (libcuda from the toolkit's
#      stub where there is no driver); not run.
# The consumers pass with TILE_STATUS_NO_DEVICE where there is no GPU and with
# TILE_STATUS_SUCCESS (checked results) on a GPU; any other status fails.
#
# ctest sets the environment (tests/install/CMakeLists.txt). Everything happens in a fresh
# directory under ${TMPDIR:-/tmp}, removed at exit (kept after a failure when
# FUSEDOPS_KEEP_TEST_DIR is set).
set -euo pipefail

for v in BUILD_DIR SOURCE_DIR CMAKE GENERATOR CC CXX PKG_CONFIG VERSION SOVERSION \
         BINDIR LIBDIR INCLUDEDIR DOCDIR; do
  if [[ -z ${!v:-} ]]; then echo "test_install: $v is not set (run it through ctest)" >&2; exit 2; fi
done
for d in "$BINDIR" "$LIBDIR" "$INCLUDEDIR" "$DOCDIR"; do
  if [[ $d == /* ]]; then
    echo "test_install: skipped: the install directory $d is absolute, not under a prefix"
    exit 77
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/fusedops-test-install.XXXXXX")
cleanup() {
  local rc=$?
  if [[ $rc -ne 0 && -n ${FUSEDOPS_KEEP_TEST_DIR:-} ]]; then
    echo "test_install: kept $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

P=$work/prefix
LIB=$P/$LIBDIR
step() { echo "== $*"; }
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }
# Runs a command with its output in a log, shown only when it fails.
quiet() {
  local log=$work/last.log
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$(printf '%q ' "$@")"
  fi
}
# The consumers must not pick up a library from anywhere but P.
unset LD_LIBRARY_PATH LD_PRELOAD PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR || true
unset CFLAGS CXXFLAGS LDFLAGS CMAKE_PREFIX_PATH || true
read -r -a extra <<<"${EXTRA_FLAGS:-}"
gen=(-G "$GENERATOR")
[[ -n ${MAKE_PROGRAM:-} ]] && gen+=("-DCMAKE_MAKE_PROGRAM=$MAKE_PROGRAM")

# ---------------------------------------------------------------------------- 1. install
step "cmake --install $BUILD_DIR --prefix $P"
quiet "$CMAKE" --install "$BUILD_DIR" --prefix "$P" ${CONFIG:+--config "$CONFIG"}

for f in "$INCLUDEDIR/fusedops.h" "$LIBDIR/libfusedops.so.$VERSION" "$LIBDIR/libfusedops.a" \
         "$LIBDIR/cmake/fusedops/fusedopsConfig.cmake" \
         "$LIBDIR/cmake/fusedops/fusedopsConfigVersion.cmake" \
         "$LIBDIR/cmake/fusedops/fusedopsTargets.cmake" "$LIBDIR/pkgconfig/fusedops.pc" \
         "$BINDIR/fusedops" "$DOCDIR/README.md" "$DOCDIR/api.md" "$DOCDIR/support.md" \
         "$DOCDIR/examples/CMakeLists.txt" "$DOCDIR/examples/softmax.c" \
         "$DOCDIR/examples/transformer_block.c"; do
  [[ -f $P/$f && ! -L $P/$f ]] || fail "missing from the install: $f"
done
cmp -s "$SOURCE_DIR/include/fusedops.h" "$P/$INCLUDEDIR/fusedops.h" ||
  fail "the installed fusedops.h differs from include/fusedops.h"
[[ -x $P/$BINDIR/fusedops ]] || fail "$BINDIR/fusedops is not executable"
# libfusedops.so -> libfusedops.so.MAJOR -> libfusedops.so.MAJOR.MINOR.PATCH
link=$(readlink "$LIB/libfusedops.so.$SOVERSION" || true)
[[ $link == "libfusedops.so.$VERSION" ]] ||
  fail "libfusedops.so.$SOVERSION links to '$link', not libfusedops.so.$VERSION"
link=$(readlink "$LIB/libfusedops.so" || true)
[[ $link == "libfusedops.so.$SOVERSION" ]] ||
  fail "libfusedops.so links to '$link', not libfusedops.so.$SOVERSION"
if [[ -n ${READELF:-} ]]; then
  soname=$("$READELF" -d "$LIB/libfusedops.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
  [[ $soname == "libfusedops.so.$SOVERSION" ]] || fail "SONAME is '$soname', not libfusedops.so.$SOVERSION"
fi
echo "layout ok: $(cd "$P" && find . -path ./"$DOCDIR" -prune -o \( -type f -o -type l \) -print | sort | tr '\n' ' ')"

# ---------------------------------------------------------------------------- 2. the CLI
step "$BINDIR/fusedops version"
out=$("$P/$BINDIR/fusedops" version) || fail "the installed fusedops does not run"
echo "$out"
[[ $out == "libfusedops $VERSION "* ]] || fail "fusedops version printed '$out'"
if command -v ldd >/dev/null; then
  resolved=$(ldd "$P/$BINDIR/fusedops" | awk '$1 == "libfusedops.so.'"$SOVERSION"'" {print $3}')
  [[ $(realpath "$resolved") == $(realpath "$LIB/libfusedops.so.$SOVERSION") ]] ||
    fail "the installed fusedops loads '$resolved', not the library in $LIB"
fi

# ---------------------------------------------------------------------------- 3. find_package
step "consumer with find_package(fusedops CONFIG)"
cb=$work/consumer-cmake
quiet "$CMAKE" -S "$SOURCE_DIR/tests/consumer/cmake" -B "$cb" "${gen[@]}" \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$P" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_FLAGS="${EXTRA_FLAGS:-}" -DCMAKE_CXX_FLAGS="${EXTRA_FLAGS:-}" \
  -DCMAKE_EXE_LINKER_FLAGS="${EXTRA_FLAGS:-}"
grep '^-- fusedops ' "$work/last.log"
found=$(sed -n 's/^fusedops_DIR:PATH=//p' "$cb/CMakeCache.txt")
[[ $(realpath "$found") == $(realpath "$LIB/cmake/fusedops") ]] ||
  fail "find_package found fusedops in '$found', not in $LIB/cmake/fusedops"
quiet "$CMAKE" --build "$cb"
for t in consumer_shared consumer_static consumer_cxx; do
  "$cb/$t" || fail "$t failed"
done
if [[ -n ${READELF:-} ]]; then
  "$READELF" -d "$cb/consumer_shared" | grep -q "NEEDED.*\[libfusedops.so.$SOVERSION\]" ||
    fail "consumer_shared does not load libfusedops.so.$SOVERSION"
  ! "$READELF" -d "$cb/consumer_static" | grep -q 'NEEDED.*libfusedops' ||
    fail "consumer_static needs libfusedops.so: fusedops::fusedops_static is not the static library"
fi

# ---------------------------------------------------------------------------- 4. pkg-config
step "consumer with pkg-config and cc"
export PKG_CONFIG_PATH=$LIB/pkgconfig
version=$("$PKG_CONFIG" --modversion fusedops) || fail "pkg-config does not find fusedops"
[[ $version == "$VERSION" ]] || fail "pkg-config --modversion fusedops is '$version', not $VERSION"
prefix=$("$PKG_CONFIG" --variable=prefix fusedops)
[[ $(realpath "$prefix") == $(realpath "$P") ]] || fail "fusedops.pc prefix is '$prefix', not $P"
read -r -a pc_flags <<<"$("$PKG_CONFIG" --cflags --libs fusedops)"
echo "pkg-config --cflags --libs fusedops: ${pc_flags[*]}"
[[ " ${pc_flags[*]} " == *" -lfusedops "* ]] || fail "pkg-config --libs lacks -lfusedops"
static_libs=" $("$PKG_CONFIG" --static --libs fusedops) "
[[ $static_libs == *" -ldl "* && $static_libs == *" -lpthread "* ]] ||
  fail "pkg-config --static --libs fusedops lacks -ldl -lpthread:$static_libs"
pb=$work/consumer-pkg-config
mkdir -p "$pb"
quiet "$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror "${extra[@]}" \
  -DCONSUMER_NAME='"pkg-config"' "$SOURCE_DIR/tests/consumer/consumer.c" \
  "${pc_flags[@]}" -ldl -lm -o "$pb/consumer"
LD_LIBRARY_PATH=$LIB "$pb/consumer" || fail "the pkg-config consumer failed"

# ---------------------------------------------------------------------------- 5. examples
step "examples/ against the prefix"
for e in softmax.c transformer_block.c; do
  cmp -s "$SOURCE_DIR/examples/$e" "$P/$DOCDIR/examples/$e" ||
    fail "the installed examples/$e differs from the source tree's"
done
eb=$work/examples
cuda_root=()
[[ -n ${CUDA_ROOT:-} ]] && cuda_root=("-DCUDAToolkit_ROOT=$CUDA_ROOT")
quiet "$CMAKE" -S "$SOURCE_DIR/examples" -B "$eb" "${gen[@]}" -DCMAKE_C_COMPILER="$CC" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_FLAGS="${EXTRA_FLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${EXTRA_FLAGS:-}" "${cuda_root[@]}"
quiet "$CMAKE" --build "$eb"
[[ -x $eb/softmax ]] || fail "examples/softmax was not built"
[[ -x $eb/transformer_block ]] || fail "examples/transformer_block was not built"
echo "built $eb/softmax and $eb/transformer_block (not run: they need a GPU)"

echo "test_install: all checks passed"

#!/usr/bin/env bash
# Builds the template component (templates/rmaps-example) the way a third
# party builds a component outside this repository:
#
#  1. packages the SDK crates with `cargo package` (the .crate files a
#     registry would serve) into a temporary directory and unpacks them;
#  2. copies the template to a temporary directory outside the workspace;
#  3. builds it and runs its tests there against the unpacked packages
#     (a [patch.crates-io] entry per SDK crate, passed as cargo
#     configuration, so the template's Cargo.toml is used unchanged; every
#     other dependency comes from crates.io);
#  4. copies libmca_rmaps_example.so into OUT_DIR.
#
# The cargo target directory is kept across runs (target/template-component,
# or $OXMPI_TEMPLATE_TARGET_DIR), so only the first run compiles abi_stable
# and the other third-party crates.
#
# Usage: scripts/build-template-component.sh [--lint] OUT_DIR
#   --lint   also check the template's formatting and run clippy on it
#            (warnings are errors)
# Exits non-zero, saying which step failed, if anything fails.
set -euo pipefail

lint=0
if [ "${1:-}" = "--lint" ]; then
    lint=1
    shift
fi
if [ $# -ne 1 ]; then
    echo "usage: $0 [--lint] OUT_DIR (the directory that receives libmca_rmaps_example.so)" >&2
    exit 2
fi
out_dir=$1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cargo=${CARGO:-cargo}
if ! command -v "$cargo" >/dev/null 2>&1; then
    echo "build-template-component.sh: cargo not found (set CARGO or put cargo on PATH)" >&2
    exit 1
fi
work=${OXMPI_TEMPLATE_TARGET_DIR:-$root/target/template-component}
template=$root/templates/rmaps-example
# The crates a component author depends on, dependencies first.
sdk_crates=(
    oxmpi-plugin-api-derive
    oxmpi-plugin-api
    oxmpi-framework-btl
    oxmpi-framework-requests
    oxmpi-framework-pml
    oxmpi-framework-mtl
    oxmpi-reduce
    oxmpi-collectives
    oxmpi-framework-coll
    oxmpi-framework-rmaps
)

trap 'echo "build-template-component.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
tmp=$(mktemp -d "${TMPDIR:-/tmp}/oxmpi-template.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "build-template-component.sh: $*" >&2
    exit 1
}

echo "==> packaging the SDK crates (cargo package) into $tmp/packages"
package_args=()
for crate in "${sdk_crates[@]}"; do
    package_args+=(-p "$crate")
done
"$cargo" package --manifest-path "$root/Cargo.toml" --no-verify --allow-dirty \
    --target-dir "$tmp/packages" "${package_args[@]}" ||
    fail "cargo package failed for the SDK crates (see above)"

# Unpacked at a fixed place under the kept target directory, so that cargo
# recompiles them only when their sources change.
sdk=$work/sdk
rm -rf "$sdk"
mkdir -p "$sdk"
declare -A unpacked
for crate in "${sdk_crates[@]}"; do
    files=("$tmp/packages/package/$crate"-[0-9]*.crate)
    [ ${#files[@]} -eq 1 ] && [ -f "${files[0]}" ] ||
        fail "expected one package of $crate in $tmp/packages/package, found: ${files[*]}"
    tar -xzf "${files[0]}" -C "$sdk" || fail "cannot unpack ${files[0]}"
    dir=$sdk/$(basename "${files[0]}" .crate)
    [ -f "$dir/Cargo.toml" ] || fail "$dir has no Cargo.toml after unpacking ${files[0]}"
    unpacked[$crate]=$dir
done

# Patch the SDK crates the template uses, directly or through another SDK
# crate (an unused patch only draws a warning from cargo).
sdk_deps() { # the SDK crates a manifest names as dependencies
    { grep -oE '^(\[dependencies\.)?oxmpi-[a-z-]+' "$1" || true; } | sed 's/^\[dependencies\.//' | sort -u
}
used=()
pending=($(sdk_deps "$template/Cargo.toml"))
while [ ${#pending[@]} -gt 0 ]; do
    crate=${pending[0]}
    pending=("${pending[@]:1}")
    [[ " ${used[*]} " == *" $crate "* ]] && continue
    [ -n "${unpacked[$crate]:-}" ] ||
        fail "the template depends on $crate, which is not one of the SDK crates this script packages"
    used+=("$crate")
    pending+=($(sdk_deps "${unpacked[$crate]}/Cargo.toml"))
done
patch_config=$tmp/sdk-patch.toml
echo "[patch.crates-io]" >"$patch_config"
for crate in "${used[@]}"; do
    echo "$crate = { path = \"${unpacked[$crate]}\" }" >>"$patch_config"
done

echo "==> copying the template to $tmp/rmaps-example"
cp -R "$template" "$tmp/rmaps-example"
rm -rf "$tmp/rmaps-example/target" "$tmp/rmaps-example/Cargo.lock"

build() { # build SUBCOMMAND [ARGS...]: cargo SUBCOMMAND on the copy
    local subcommand=$1
    shift
    "$cargo" "$subcommand" --manifest-path "$tmp/rmaps-example/Cargo.toml" \
        --target-dir "$work/target" --config "$patch_config" "$@"
}

echo "==> building the template against the packaged SDK crates"
build build --lib || fail "the template component did not build against the packaged SDK crates (see above)"
build test --lib || fail "the template component's tests failed (see above)"
if [ $lint -eq 1 ]; then
    echo "==> cargo fmt --check and clippy on the template"
    "$cargo" fmt --manifest-path "$tmp/rmaps-example/Cargo.toml" --check || fail "the template is not formatted (run cargo fmt in templates/rmaps-example)"
    build clippy --all-targets -- -D warnings || fail "clippy found problems in the template (see above)"
fi

# The dependencies the template resolved to must be the packaged SDK crates.
lock=$tmp/rmaps-example/Cargo.lock
for crate in "${used[@]}"; do
    if grep -q "^name = \"$crate\"$" "$lock" &&
        grep -A2 "^name = \"$crate\"$" "$lock" | grep -q '^source = '; then
        fail "$crate was taken from a registry, not from the packaged SDK crate (see $lock)"
    fi
done

library=$work/target/debug/libmca_rmaps_example.so
[ -f "$library" ] || fail "cargo reported success but $library does not exist"
mkdir -p "$out_dir"
cp "$library" "$out_dir/libmca_rmaps_example.so"
echo "==> $out_dir/libmca_rmaps_example.so"

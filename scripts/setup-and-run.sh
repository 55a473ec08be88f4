#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine that has Rust installed, builds oxmpi,
# and runs the main job.
#
#   1. installs the system packages listed in scripts/system-packages.txt
#      (apt-get; with sudo when not run as root);
#   2. builds the workspace in release mode, and writes the pkg-config
#      files of libmpi (target/release/pkgconfig);
#   3. runs the main job: a 4-rank PMI wire-up under our mpirun, an
#      MPICH-built program under it, the oxmpi examples `hello` (4 ranks,
#      default btls: self and sm) and `pingpong` (2 ranks, over shared
#      memory, then over tcp on loopback), and oxmpi_info showing where a
#      value comes from.
#
# Set OXMPI_SKIP_PACKAGES=1 to skip step 1.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# --- 1. system packages -------------------------------------------------
install_system_packages() {
    local list=scripts/system-packages.txt
    local packages missing=()
    packages=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$' || true)
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup: apt-get not found; install these packages yourself: $(echo $packages)" >&2
        return 0
    fi
    for p in $packages; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        echo "==> system packages: all present ($(echo $packages))"
        return 0
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "setup: not root and sudo is not installed; as root, run: apt-get install ${missing[*]}" >&2
            exit 1
        fi
        sudo=(sudo)
    fi
    echo "==> apt-get update && apt-get install ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

if [ "${OXMPI_SKIP_PACKAGES:-0}" != 1 ]; then
    install_system_packages
fi

# --- 2. build -----------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1 && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2
    exit 1
fi
echo "==> cargo build --workspace --release (libraries and components, programs, examples)"
cargo build --workspace --release --lib --bins --examples
echo "==> pkg-config files for libmpi in $(target/release/mpicc -showme:pkgconfig)"

# --- 3. the main job ------------------------------------------------------
# A real multi-rank run: 4 ranks wire up over PMI-1 (each publishes a value,
# all meet at a barrier, each reads every other rank's value) and finalize.
mpirun=target/release/mpirun
echo
echo "==> $mpirun --tag-output -n 4 target/release/examples/pmi_hello --barriers 2"
"$mpirun" --tag-output -n 4 target/release/examples/pmi_hello --barriers 2

# With MPICH installed, an MPICH-built MPI program under our mpirun.
if command -v mpicc.mpich >/dev/null 2>&1; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mpicc.mpich -o "$work/mpi_hello" core/pmi/tests/c/mpi_hello.c
    echo
    echo "==> $mpirun -n 4 mpi_hello (built with mpicc.mpich)"
    "$mpirun" -n 4 "$work/mpi_hello"
fi

echo
echo "==> $mpirun -n 4 target/release/examples/hello (the oxmpi Rust API over pml ob1, btls self and sm)"
"$mpirun" -n 4 target/release/examples/hello
echo
echo "==> $mpirun -n 2 --mca btl self,sm target/release/examples/pingpong"
"$mpirun" -n 2 --mca btl self,sm target/release/examples/pingpong
echo
echo "==> $mpirun -n 2 --mca btl self,tcp --mca btl_tcp_if_include lo target/release/examples/pingpong"
"$mpirun" -n 2 --mca btl self,tcp --mca btl_tcp_if_include lo target/release/examples/pingpong

info=target/release/oxmpi_info
echo
echo "==> $info (frameworks and components)"
"$info"
echo
echo "==> OXMPI_MCA_btl_base_verbose=20 $info --explain btl_base_verbose"
OXMPI_MCA_btl_base_verbose=20 "$info" --explain btl_base_verbose

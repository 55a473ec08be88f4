#!/usr/bin/env bash
# Runs the reliability tests (tcp framing and floods, the handshake crowd,
# mpirun's edges, bounded input files, PMI, modex, rmaps, plugin-api, the
# btl and pml test kits and conformance suites) N
# times in a row and stops at the first failure, keeping its log.
#
# Usage: scripts/repeat-reliability-tests.sh [N]   (default 100)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=${1:-100}
log=$(mktemp -d)
cargo build -q --workspace --all-targets || exit 1
suites=(
    "-p oxmpi-btl-tcp"
    "-p oxmpi-mpirun --test tcp_flood --test edges --test input_files --test failures --test p2p"
    "-p oxmpi-mca --lib --test input_files --test long_inputs"
    "-p oxmpi-pmi"
    "-p oxmpi-mpi-core --lib"
    "-p oxmpi-framework-rmaps"
    "-p oxmpi-plugin-api --lib"
    "-p oxmpi-framework-btl --features testkit -p oxmpi-btl-self"
    "-p oxmpi-framework-pml --features testkit -p oxmpi-pml-ob1"
)
for i in $(seq 1 "$n"); do
    start=$(date +%s)
    for suite in "${suites[@]}"; do
        # shellcheck disable=SC2086
        if ! cargo test -q $suite > "$log/last.log" 2>&1; then
            echo "iteration $i: FAILED in cargo test $suite; log: $log/last.log"
            exit 1
        fi
    done
    echo "iteration $i: pass ($(( $(date +%s) - start )) s)"
done
echo "$n passed, 0 failed"
rm -rf "$log"

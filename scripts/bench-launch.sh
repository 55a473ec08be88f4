#!/usr/bin/env bash
# Launch-time benchmark: wall time of `mpirun -n 2` and `-n 8` starting
#   (a) /bin/true, and
#   (b) a program that does the wire-up, one barrier, and exits, and
#   (c) for oxmpi, the Rust API's hello over tcp (MPI init with the btl and
#       pml components, one message from every rank to rank 0, finalize)
# with oxmpi's mpirun, Open MPI's mpirun and MPICH's mpiexec (when their
# Debian packages are installed), measured by hyperfine. The commands are
# measured in interleaved rounds, and a CPU-placement probe runs before and
# after (bench/p2p/README.md, "Rounds"), so a change of vCPU placement shows up instead
# of biasing one launcher.
#
# Wire-up program per launcher: oxmpi and MPICH run oxmpi's PMI-1 test
# program (pmi_hello --barriers 1: init, put, barrier, get, finalize; MPICH's
# mpiexec serves it too); Open MPI, whose launcher speaks PMIx, runs an MPI
# program (MPI_Init, MPI_Barrier, MPI_Finalize: more than wire-up).
#
# Usage: scripts/bench-launch.sh [--runs N] [--rounds R]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=20
rounds=3
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        *) echo "usage: $0 [--runs N] [--rounds R]" >&2; exit 2 ;;
    esac
done
command -v hyperfine >/dev/null || { echo "bench-launch.sh: hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }

cargo build --release -q --workspace --lib --bins --examples
ox=target/release/mpirun
hello=target/release/examples/pmi_hello
mpi_hello=target/release/examples/hello
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
declare -a names cmds
add() { names+=("$1"); cmds+=("$2"); }
for n in 2 8; do
    add "oxmpi   -n $n /bin/true" "$ox --oversubscribe -n $n /bin/true"
    command -v mpirun.openmpi >/dev/null && add "openmpi -n $n /bin/true" "mpirun.openmpi --oversubscribe -n $n /bin/true"
    command -v mpiexec.mpich >/dev/null && add "mpich   -n $n /bin/true" "mpiexec.mpich -n $n /bin/true"
    add "oxmpi   -n $n wire-up+barrier" "$ox --oversubscribe -n $n $hello --barriers 1"
    if command -v mpicc.openmpi >/dev/null && mpicc.openmpi -O2 -o "$work/barrier.openmpi" tools/mpirun/benches/barrier.c 2>/dev/null; then
        add "openmpi -n $n MPI_Init+barrier" "mpirun.openmpi --oversubscribe -n $n $work/barrier.openmpi"
    fi
    command -v mpiexec.mpich >/dev/null && add "mpich   -n $n wire-up+barrier" "mpiexec.mpich -n $n $hello --barriers 1"
    add "oxmpi   -n $n hello (tcp)" "$ox --oversubscribe -n $n --mca btl self,tcp $mpi_hello"
done

probe() {
    python3 scripts/placement-probe.py
}

echo "placement probe before: $(probe)"
for r in $(seq 1 "$rounds"); do
    for i in "${!names[@]}"; do
        hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/r$r-$i.json" "${cmds[$i]}" >/dev/null 2>&1 \
            || echo "failed: ${cmds[$i]}" >&2
    done
done
echo "placement probe after:  $(probe)"

python3 - "$work" "$rounds" "${names[@]}" <<'PY'
import json, sys, statistics, os
work, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print(f"\n| {'launch':34} | median ms | min ms | target |")
print(f"|{'-'*36}|-----------|--------|--------|")
targets = {"oxmpi   -n 2 /bin/true": "≤ mpich", "oxmpi   -n 2 wire-up+barrier": "< 15", "oxmpi   -n 2 hello (tcp)": "< 10"}
for i, name in enumerate(names):
    times = []
    for r in range(1, rounds + 1):
        p = os.path.join(work, f"r{r}-{i}.json")
        if os.path.exists(p):
            times += json.load(open(p))["results"][0]["times"]
    if not times:
        print(f"| {name:34} | failed    |        |        |"); continue
    print(f"| {name:34} | {statistics.median(times)*1e3:9.2f} | {min(times)*1e3:6.2f} | {targets.get(name, ''):6} |")
PY

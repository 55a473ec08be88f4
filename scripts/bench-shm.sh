#!/usr/bin/env bash
# Shared-memory benchmark: ping-pong latency and streaming bandwidth from
# 0 B to 4 MiB between two processes on one machine, next to the floors:
#   - cache line: two pinned processes ping-pong through one 64-byte line
#     of a MAP_SHARED mapping (latency floor),
#   - process_vm_readv: one process copies the other's buffer, one call per
#     message (single-copy bandwidth floor),
#   - memcpy: copies within one process (copy bandwidth),
#   - Open MPI over vader (--mca btl self,vader),
#   - MPICH over its UCX device with UCX's default transports (shared
#     memory: sysv/posix with cma; printed below the table),
#   - oxmpi over its sm btl (--mca btl self,sm; --ox-btl changes it),
# every two-process one bound to two cores, with the method, sizes and data
# checks of bench/p2p/README.md. Then the self-send software path: one
# oxmpi rank's immediate_send + immediate_receive_into + wait to itself, in
# ns per message, as a singleton and under `mpirun -n 1`.
#
# The programs run in interleaved rounds with a CPU-placement probe before
# and after (bench/p2p/README.md, "Rounds"); the tables show the best round
# of each (lowest latency and time per message, highest bandwidth). A
# missing implementation (not installed, not built, failing) leaves its
# column empty with a note.
#
# Usage: scripts/bench-shm.sh [--quick] [--rounds R] [--ox-btl LIST]
#   --quick         a tenth of the iterations; one round unless given
#   --rounds R      rounds (default 3)
#   --ox-btl LIST   the btl list of the oxmpi column (default self,sm)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=
rounds=
ox_btl=self,sm
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=--quick; shift ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        --ox-btl) ox_btl=${2:?--ox-btl needs a btl list, e.g. self,sm}; shift 2 ;;
        *) echo "usage: $0 [--quick] [--rounds R] [--ox-btl LIST]" >&2; exit 2 ;;
    esac
done
if [ -n "$quick" ]; then : "${rounds:=1}"; else : "${rounds:=3}"; fi
case "$rounds" in
    *[!0-9]* | 0 | '') echo "bench-shm.sh: --rounds takes a whole number from 1" >&2; exit 2 ;;
esac
case "$ox_btl" in
    *[!a-z0-9_,]* | '') echo "bench-shm.sh: --ox-btl takes a comma-separated list of btl names" >&2; exit 2 ;;
esac

tgt=${CARGO_TARGET_DIR:-target}
rel=$tgt/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
note() { echo "bench-shm.sh: $*" >&2; }
# Per-run time limit (a hung run must not hang the benchmark).
limit=300
[ -n "$quick" ] && limit=120

# --- build ------------------------------------------------------------------
echo "==> building (release)"
have_floor=1
cargo build --release -q -p oxmpi-bench-p2p --no-default-features --bin shm_floor 2>"$work/build-floor.log" || {
    have_floor=
    note "shm_floor did not build (cargo output below); the floor columns stay empty"
    tail -n 20 "$work/build-floor.log" >&2
}
. scripts/bench-common.sh
bench_build_oxmpi
bench_build_c pt2pt

# --- runs -------------------------------------------------------------------
ox_mca=(--mca btl "$ox_btl")
case ",$ox_btl," in *,tcp,*) ox_mca+=(--mca btl_tcp_if_include lo) ;; esac
# MPICH (ch4:ucx): UCX's own choice of transports, which between two
# processes of one machine is shared memory; a UCX_TLS from the caller's
# environment is dropped so that it cannot turn the column into something else.
mpich_run="env -u UCX_TLS -u UCX_NET_DEVICES mpiexec.mpich -n 2 -bind-to core"
declare -a names cmds
add() { names+=("$1"); cmds+=("$2"); }
if [ -n "$have_floor" ]; then
    add cacheline "$rel/shm_floor cacheline $quick"
    add readv "$rel/shm_floor readv $quick"
    add memcpy "$rel/shm_floor memcpy $quick"
fi
[ -n "$have_ompi" ] && add openmpi "mpirun.openmpi --oversubscribe -n 2 --mca btl self,vader --bind-to core $work/pt2pt.openmpi $quick"
[ -n "$have_mpich" ] && add mpich "$mpich_run $work/pt2pt.mpich $quick"
if [ -n "$have_ox" ]; then
    add oxmpi "$rel/mpirun -n 2 ${ox_mca[*]} --bind-to core $rel/oxmpi_pt2pt $quick"
    add self_singleton "$rel/oxmpi_selfsend $quick"
    add self_mpirun "$rel/mpirun -n 1 $rel/oxmpi_selfsend $quick"
fi

probe() {
    python3 scripts/placement-probe.py
}

echo "==> shared memory: ${names[*]:-nothing to run}; $rounds round(s)"
echo "placement probe before: $(probe)"
for r in $(seq 1 "$rounds"); do
    for i in "${!names[@]}"; do
        out=$work/run-${names[$i]}-$r
        # shellcheck disable=SC2086 # the command is a word list
        if ! timeout "$limit" ${cmds[$i]} >"$out.out" 2>"$out.err"; then
            note "${names[$i]} failed in round $r: ${cmds[$i]}"
            tail -n 8 "$out.err" >&2
        fi
    done
done
echo "placement probe after:  $(probe)"
for n in "${names[@]}"; do
    grep -h '^#' "$work/run-$n-1.out" 2>/dev/null | head -n 1 || true
done
if [ -n "$have_mpich" ]; then
    # Which UCX transports MPICH's endpoints use (one short run, logged).
    # shellcheck disable=SC2086 # the command is a word list
    tls=$(UCX_LOG_LEVEL=info timeout 60 $mpich_run "$work/pt2pt.mpich" --quick --sizes 8 2>&1 |
        sed -n 's/.*ep_cfg\[[0-9]*\]: \(tag([^)]*)\).*/\1/p' | sort -u | tr '\n' ' ' || true)
    echo "# MPICH UCX transports: ${tls:-not reported (UCX_LOG_LEVEL=info printed no ep_cfg line)}"
fi

# --- tables -----------------------------------------------------------------
python3 - "$work" "$rounds" "$ox_btl" "${names[*]:-}" <<'PY'
import os, sys
work, rounds, ox_btl, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
SIZES = [0, 1, 8, 64, 512, 4096, 65536, 262144, 1 << 20, 4 << 20]
ALL = ["cacheline", "readv", "memcpy", "openmpi", "mpich", "oxmpi", "self_singleton", "self_mpirun"]
LABEL = {"cacheline": "cache line", "readv": "process_vm_readv", "memcpy": "memcpy",
         "openmpi": "Open MPI vader", "mpich": "MPICH shm", "oxmpi": f"oxmpi ({ox_btl})",
         "self_singleton": "singleton", "self_mpirun": "mpirun -n 1"}
LOWER_IS_BETTER = {"lat": True, "self": True, "bw": False}

def human(n):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"

# best[name][kind][size] over the rounds.
best = {n: {"lat": {}, "bw": {}, "self": {}} for n in ALL}
for n in names:
    for r in range(1, rounds + 1):
        p = os.path.join(work, f"run-{n}-{r}.out")
        if not os.path.exists(p):
            continue
        for line in open(p):
            f = line.split()
            if len(f) != 3 or f[0] not in best[n]:
                continue
            try:
                size, v = int(f[1]), float(f[2])
            except ValueError:
                continue
            d = best[n][f[0]]
            if size not in d or (v < d[size] if LOWER_IS_BETTER[f[0]] else v > d[size]):
                d[size] = v

def cell(n, kind, size):
    v = best[n][kind].get(size)
    if v is None:
        return "—"
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"

lat_cols = ["cacheline", "openmpi", "mpich", "oxmpi"]
bw_cols = ["readv", "memcpy", "openmpi", "mpich", "oxmpi"]
head = (["size"] + [f"{LABEL[n]} lat µs" for n in lat_cols]
        + [f"{LABEL[n]} bw MB/s" for n in bw_cols])
print()
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|")
for s in SIZES:
    row = ([human(s)] + [cell(n, "lat", s) for n in lat_cols]
           + [cell(n, "bw", s) for n in bw_cols])
    print("| " + " | ".join(row) + " |")
print()
print("latency: one way, half a ping-pong round trip; bandwidth: 64-message windows, 1 MB = 10^6 B;")
print(f"best of {rounds} round(s). The cache line carries up to 56 B (rows 0, 1, 8 B);")
print("process_vm_readv: one call per message; memcpy: one process.")
print(f"oxmpi runs over --mca btl {ox_btl}" + (" (tcp on loopback: not shared memory yet)." if "tcp" in ox_btl.split(",") else "."))
missing = [LABEL[n] for n in ALL[:6] if not (best[n]["lat"] or best[n]["bw"])]
if missing:
    print("no figures from:", ", ".join(missing), "(see the messages above)")

def ratio(n, kind, size, floor):
    a, b = best[n][kind].get(size), best[floor][kind].get(size)
    return "—" if a is None or b is None else f"{a / b:.2f}×"

print()
print(f"| vs the floors | 8 B latency / cache line | 1 MiB bandwidth / process_vm_readv |")
print("|---|---:|---:|")
for n in ("openmpi", "mpich", "oxmpi"):
    print(f"| {LABEL[n]} | {ratio(n, 'lat', 8, 'cacheline')} | {ratio(n, 'bw', 1 << 20, 'readv')} |")

def against_peers(kind, size):
    """oxmpi's figure over the better of Open MPI and MPICH."""
    o = best["oxmpi"][kind].get(size)
    peers = [best[n][kind].get(size) for n in ("openmpi", "mpich")]
    peers = [v for v in peers if v is not None]
    if o is None or not peers:
        return "—", None
    better = min(peers) if LOWER_IS_BETTER[kind] else max(peers)
    return f"{o / better:.2f}×", o / better

print()
print("| oxmpi against the better of Open MPI and MPICH | ratio | target | met |")
print("|---|---:|---:|---|")
for kind, size, target in (("lat", 8, 0.8), ("bw", 65536, 1.05), ("bw", 1 << 20, 1.05), ("bw", 4 << 20, 1.05)):
    text, r = against_peers(kind, size)
    goal = f"≤ {target}×" if LOWER_IS_BETTER[kind] else f"≥ {target}×"
    met = "—" if r is None else ("yes" if (r <= target if LOWER_IS_BETTER[kind] else r >= target) else "no")
    what = f"{human(size)} {'latency' if kind == 'lat' else 'bandwidth'}"
    print(f"| {what} | {text} | {goal} | {met} |")

print()
print("| self-send (immediate_send + immediate_receive_into + wait) | singleton ns/msg | mpirun -n 1 ns/msg | target |")
print("|---|---:|---:|---|")
for s in (0, 8):
    a = best["self_singleton"]["self"].get(s)
    b = best["self_mpirun"]["self"].get(s)
    fmt = lambda v: "—" if v is None else f"{v:.0f}"
    print(f"| {human(s)} | {fmt(a)} | {fmt(b)} | < 100 ns |")
PY

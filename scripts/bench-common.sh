# Build steps shared by scripts/bench-p2p.sh and scripts/bench-shm.sh
# (sourced, not run). The caller defines `note`, `$work` (a scratch
# directory), `$tgt` (the cargo target directory) and `$rel` ($tgt/release).

# Builds mpirun, every component and oxmpi-bench-p2p's programs in release,
# plus the extra cargo arguments given (e.g. `-p oxmpi --examples`, built
# in a second cargo call); sets have_ox (1 or empty) and, when the target
# directory is not <checkout>/target, points the component path at it
# (mpirun finds the components next to itself only there).
bench_build_oxmpi() {
    have_ox=1
    local components=() f
    for f in components/*/*/Cargo.toml; do
        components+=(-p "$(sed -n 's/^name = "\(.*\)"/\1/p' "$f" | head -n 1)")
    done
    if ! { cargo build --release -q -p oxmpi-mpirun -p oxmpi-bench-p2p "${components[@]}" &&
            { [ $# -eq 0 ] || cargo build --release -q "$@"; }; } 2>"$work/build-ox.log"; then
        have_ox=
        note "the oxmpi side did not build (mpirun, the components, the benchmark programs${*:+, $*});"
        note "its columns stay empty. First errors:"
        grep -m 5 -A 3 '^error' "$work/build-ox.log" >&2 || tail -n 20 "$work/build-ox.log" >&2
    fi
    if [ "$(cd "$tgt" 2>/dev/null && pwd -P)" != "$(pwd -P)/target" ] && [ -z "${OXMPI_MCA_mca_base_component_path:-}" ]; then
        export OXMPI_MCA_mca_base_component_path=$rel
    fi
}

# Compiles the C programs named (from bench/p2p/c/, e.g. `pt2pt hello`)
# with Open MPI's and MPICH's compilers into $work/<name>.openmpi and
# $work/<name>.mpich; sets have_ompi and have_mpich (1 or empty), saying
# why a column stays empty.
bench_build_c() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    local program
    have_ompi=
    if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
        have_ompi=1
        : >"$work/cc-ompi.log"
        for program in "$@"; do
            mpicc.openmpi -O2 -o "$work/$program.openmpi" "bench/p2p/c/$program.c" 2>>"$work/cc-ompi.log" || have_ompi=
        done
        [ -n "$have_ompi" ] || { note "mpicc.openmpi failed:"; cat "$work/cc-ompi.log" >&2; }
    else
        note "Open MPI not found (mpicc.openmpi, mpirun.openmpi; Debian: openmpi-bin libopenmpi-dev); its columns stay empty"
    fi
    have_mpich=
    if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
        have_mpich=1
        : >"$work/cc-mpich.log"
        for program in "$@"; do
            mpicc.mpich -O2 -o "$work/$program.mpich" "bench/p2p/c/$program.c" 2>>"$work/cc-mpich.log" || have_mpich=
        done
        [ -n "$have_mpich" ] || { note "mpicc.mpich failed:"; cat "$work/cc-mpich.log" >&2; }
    else
        note "MPICH not found (mpicc.mpich, mpiexec.mpich; Debian: mpich libmpich-dev); its columns stay empty"
    fi
}

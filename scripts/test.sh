#!/usr/bin/env bash
# Checks formatting and lints (clippy warnings are errors), then runs every
# test. The tests build what they run (programs, examples, component
# libraries) themselves, through tests/support.
#
# Usage: scripts/test.sh [extra arguments for `cargo test`]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v cargo >/dev/null 2>&1 && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "test.sh: cargo not found; install Rust (https://rustup.rs) first" >&2
    exit 1
fi

echo "==> cargo fmt --check, cargo clippy (warnings are errors)"
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings

# The template component lives outside the workspace: lint it too (the
# workspace test template_component builds it and runs jobs with it).
echo "==> templates/rmaps-example: cargo fmt --check, clippy, build against the packaged SDK crates"
scripts/build-template-component.sh --lint target/template-component/out

echo "==> cargo test --workspace $*"
cargo test --workspace "$@"

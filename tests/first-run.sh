#!/usr/bin/env bash
# A newcomer's first `scripts/run`, in batch Emacs with an empty HOME: it must open the chat on
# a copy of the demo notes and leave the tracked demo/notes as they are (the tests read them).
set -euo pipefail
cd "$(dirname "$0")/.."
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
before=$(cd demo/notes && sha256sum -- *)
# The toolchain stays where it is installed; everything else starts empty.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
HOME=$home CARGO_HOME=$cargo_home RUSTUP_HOME=$rustup_home ORG_AGENT_RUN_BATCH=1 scripts/run >"$home/run.log" 2>&1 || { cat "$home/run.log"; exit 1; }
copy=$home/.emacs.d/org-agent/demo-notes
fail() { echo "first run: $*"; cat "$home/run.log"; exit 1; }
grep -q "^run: \*org-agent-chat\* is open on $copy\$" "$home/run.log" || fail "the chat did not open on the copy"
[ "$(cd "$copy" && sha256sum -- *)" = "$before" ] || fail "the copy differs from demo/notes"
[ "$(cd demo/notes && sha256sum -- *)" = "$before" ] || fail "demo/notes changed"
[ -f "$home/.emacs.d/org-agent/store.log" ] || fail "no store was written in the state directory"
echo "first run: the chat opened on a copy of the demo notes; demo/notes unchanged"

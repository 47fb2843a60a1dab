# shellcheck shell=bash
# Sourced by the lab test and benchmark scripts.

# recap KEY LOG: sum one counter (changed, failed, unreachable) over every PLAY RECAP of a log.
recap() {
  awk -v key="$1" '/PLAY RECAP/ {on=1; next}
    on && / : ok=/ { for (i = 1; i <= NF; i++) if ($i ~ "^" key "=") { split($i, kv, "="); n += kv[2] } }
    END { print n + 0 }' "$2"
}

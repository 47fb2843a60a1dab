# shellcheck shell=bash
# Sourced by the lab test and benchmark scripts.

# recap KEY LOG: sum one counter (changed, failed, unreachable) over every PLAY RECAP of a log.
recap() {
  awk -v key="$1" '/PLAY RECAP/ {on=1; next}
    on && / : ok=/ { for (i = 1; i <= NF; i++) if ($i ~ "^" key "=") { split($i, kv, "="); n += kv[2] } }
    END { print n + 0 }' "$2"
}

# log_folded LOG: the log as one line. The YAML callback folds long messages at places that depend
# on the names' lengths, so runs of spaces and line breaks read as one space.
log_folded() { tr -s ' \n' '  ' <"$1"; }
# log_says LOG TEXT: whether the log says it (folded).
log_says() { log_folded "$1" | grep -q -- "$2"; }
# log_count LOG TEXT: how many times the log says it (folded).
log_count() { log_folded "$1" | grep -o -- "$2" | wc -l; }

#!/usr/bin/env bash
# A throwaway PostgreSQL server for the explorer tests, on 127.0.0.1, from Debian's packages.
#   postgres-server.sh start DIR PORT  initialises DIR (once) and starts the server; prints
#                                      RBTNODE_TEST_PG_URL, RBTNODE_TEST_PG_DATA, RBTNODE_TEST_PG_BIN
#   postgres-server.sh stop DATA       stops it at once (as a crash would)
#   postgres-server.sh up DATA         starts it again with the same settings
# Run as root, the server runs as the postgres user. Never prompts.
set -euo pipefail
BIN="${RBTNODE_TEST_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
if [ -z "$BIN" ] || [ ! -x "$BIN/pg_ctl" ]; then echo "no PostgreSQL server binaries (install the postgresql package)" >&2; exit 3; fi
as_pg () { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cmd="${1:-}"
case "$cmd" in
  start)
    dir="$2"; port="$3"; data="$dir/data"
    mkdir -p "$dir"
    if [ ! -f "$data/PG_VERSION" ]; then
      printf '%s\n' rbt-test-pw > "$dir/pwfile"
      if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$dir"; fi
      as_pg "$BIN/initdb" -D "$data" -U rbt --pwfile="$dir/pwfile" -A scram-sha-256 >/dev/null
      printf "port = %s\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nfsync = off\n" "$port" "$dir" | as_pg tee -a "$data/postgresql.conf" >/dev/null
    fi
    as_pg "$BIN/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null
    port="$(sed -n 's/^port = \([0-9]*\)$/\1/p' "$data/postgresql.conf" | tail -1)"
    echo "RBTNODE_TEST_PG_URL=postgres://rbt:rbt-test-pw@127.0.0.1:$port/postgres"
    echo "RBTNODE_TEST_PG_DATA=$data"
    echo "RBTNODE_TEST_PG_BIN=$BIN"
    ;;
  stop) as_pg "$BIN/pg_ctl" -D "$2" -m immediate -w stop >/dev/null ;;
  up) as_pg "$BIN/pg_ctl" -D "$2" -l "$2/../server.log" -w -t 60 start >/dev/null ;;
  *) echo "usage: $0 start DIR PORT | stop DATA | up DATA" >&2; exit 2 ;;
esac

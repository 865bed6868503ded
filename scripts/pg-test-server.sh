#!/usr/bin/env bash
# A throwaway PostgreSQL with pgvector for tests and CI.
#
#   scripts/pg-test-server.sh start DIR   # prints the connection URL
#   scripts/pg-test-server.sh url DIR     # prints it again
#   scripts/pg-test-server.sh stop DIR    # stops the server (DIR stays)
#
# `start` on a DIR whose server was stopped starts that server again, with
# its data, port and password (the same URL): a restart, as the tests of a
# database that goes away under load use.
# The server comes from the PyPI wheel pgserver (pinned version, sha256
# checked), which bundles a PostgreSQL 16 with pgvector; it is installed once
# into a virtual environment under target/. `start` runs initdb in DIR, starts
# the server on a unix socket in DIR and on a free localhost port, creates the
# role and database `agents` (password generated, kept in DIR/password with
# mode 0600) with the `vector` extension (and `agents_plain` without it, for
# the test of that error), and prints
# postgres://agents:PASSWORD@127.0.0.1:PORT/agents.
#
# PostgreSQL refuses to run as root: run as root (CI, containers), the server
# runs as the unprivileged system user agents-pg (created if missing), which
# owns DIR. It is a test server: fsync is off and local connections trust.
set -euo pipefail

PGSERVER_VERSION=0.1.4
# The cp311 manylinux x86_64 wheel; another platform needs its hash here.
PGSERVER_SHA256=d595789b47624a3d963aa9aa6359da9be31beb7e61f1a45541953242068b8813
SERVER_USER=agents-pg

die() { echo "pg-test-server: $*" >&2; exit 1; }

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/target/pgserver-venv"

usage() { die "usage: $0 start DIR | stop DIR | url DIR"; }
[ $# -eq 2 ] || usage
cmd="$1"
dir="$(mkdir -p "$2" && cd "$2" && pwd)"

# The bundled installation (bin, lib, share), installed on first use.
pginstall() {
  local found
  found="$(ls -d "$venv"/lib/python3*/site-packages/pgserver/pginstall 2>/dev/null | head -n1 || true)"
  if [ -z "$found" ] || [ ! -x "$found/bin/postgres" ]; then
    echo "pg-test-server: installing pgserver==$PGSERVER_VERSION into $venv" >&2
    python3 -m venv "$venv" >&2
    local req="$venv/requirements.txt"
    echo "pgserver==$PGSERVER_VERSION --hash=sha256:$PGSERVER_SHA256" >"$req"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --require-hashes -r "$req" >&2 || die "cannot install pgserver==$PGSERVER_VERSION (see above)"
    found="$(ls -d "$venv"/lib/python3*/site-packages/pgserver/pginstall | head -n1)"
  fi
  echo "$found"
}

# Runs a command as the server's user (root cannot run PostgreSQL).
as_server() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$SERVER_USER" -- "$@"
  else
    "$@"
  fi
}

ensure_user() {
  [ "$(id -u)" = 0 ] || return 0
  id "$SERVER_USER" >/dev/null 2>&1 \
    || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$SERVER_USER" \
    || die "cannot create the system user $SERVER_USER"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
  local install bin
  install="$(pginstall)"
  ensure_user
  if [ -f "$dir/url" ] && [ -f "$dir/data/postmaster.pid" ] && as_server "$install/bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    cat "$dir/url"
    return
  fi
  if [ "$(id -u)" = 0 ]; then
    chown "$SERVER_USER" "$dir"
    # The server's user must reach the binaries; a checkout under /root is
    # closed to it, so it gets a copy of its own.
    if ! runuser -u "$SERVER_USER" -- test -x "$install/bin/postgres"; then
      rm -rf "$dir/pginstall"
      cp -a "$install" "$dir/pginstall"
      chown -R "$SERVER_USER" "$dir/pginstall"
      install="$dir/pginstall"
    fi
    runuser -u "$SERVER_USER" -- test -w "$dir" || die "$dir: the user $SERVER_USER cannot write here (a parent directory is closed to it)"
  fi
  bin="$install/bin"
  echo "$bin" >"$dir/bin"
  if [ -f "$dir/url" ] && [ -f "$dir/data/PG_VERSION" ]; then
    # Stopped before: the same server again.
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -w -t 60 start >/dev/null \
      || { cat "$dir/data/server.log" >&2; die "the server did not start again"; }
    cat "$dir/url"
    return
  fi
  local port password
  port="$(free_port)"
  password="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
  rm -rf "$dir/data" "$dir/socket"
  as_server mkdir -p "$dir/socket"
  (umask 077 && printf '%s\n' "$password" >"$dir/password")
  [ "$(id -u)" = 0 ] && chown "$SERVER_USER" "$dir/password"
  as_server "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/socket'
max_connections = 300
shared_buffers = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -w -t 60 start >/dev/null \
    || { cat "$dir/data/server.log" >&2; die "the server did not start"; }
  local psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/socket" -p "$port" -U postgres)
  as_server "${psql[@]}" -d postgres -c "CREATE ROLE agents LOGIN PASSWORD '$password'" -c "CREATE DATABASE agents OWNER agents" >/dev/null
  as_server "${psql[@]}" -d agents -c "CREATE EXTENSION vector" >/dev/null
  # A database without pgvector, for the test of that error.
  as_server "${psql[@]}" -d postgres -c "CREATE DATABASE agents_plain OWNER agents" >/dev/null
  echo "postgres://agents:$password@127.0.0.1:$port/agents" >"$dir/url"
  chmod 600 "$dir/url"
  cat "$dir/url"
}

stop() {
  [ -f "$dir/bin" ] || die "$dir: no server was started here"
  local bin
  bin="$(cat "$dir/bin")"
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  fi
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  url) [ -f "$dir/url" ] || die "$dir: no server was started here"; cat "$dir/url" ;;
  *) usage ;;
esac

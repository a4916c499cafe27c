#!/usr/bin/env bash
# Make a PostgreSQL server available for the test suite and print a DATABASE_URL for it.
# Order: $FLEXZONE_TEST_DATABASE_URL if set; a server at 127.0.0.1:5432 that lets `postgres` in
# without a password; otherwise install (Debian, as root) and start the distribution's cluster and
# connect over its unix socket as a superuser role named after the current user.
set -euo pipefail
DB_NAME=${FLEXZONE_TEST_DB_NAME:-flexzone}

log() { echo "ensure-postgres: $*" >&2; }

if [[ -n "${FLEXZONE_TEST_DATABASE_URL:-}" ]]; then
  echo "$FLEXZONE_TEST_DATABASE_URL"; exit 0
fi

if command -v psql >/dev/null && PGCONNECT_TIMEOUT=3 psql -w -h 127.0.0.1 -p 5432 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
  echo "postgres://postgres@127.0.0.1:5432/${DB_NAME}"; exit 0
fi

if ! command -v pg_lsclusters >/dev/null || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  if [[ $(id -u) -ne 0 ]]; then
    log "PostgreSQL is not installed; run 'make test' as root once (it installs postgresql with apt-get)"; exit 1
  fi
  log "installing postgresql with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi

version=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_lsclusters -h | awk '{print $1, $2}' | grep -q "^${version} main$"; then
  log "creating cluster ${version}/main"
  pg_createcluster "$version" main >&2
fi
if ! pg_lsclusters -h | awk -v v="$version" '$1==v && $2=="main" {print $4}' | grep -q online; then
  log "starting cluster ${version}/main"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2
fi
socket_dir=/var/run/postgresql
port=$(pg_lsclusters -h | awk -v v="$version" '$1==v && $2=="main" {print $3}')
me=$(id -un)
for _ in $(seq 1 30); do pg_isready -q -h "$socket_dir" -p "$port" && break; sleep 1; done
if [[ $(id -u) -eq 0 ]]; then
  runuser -u postgres -- psql -h "$socket_dir" -p "$port" -Atqc \
    "do \$\$ begin if not exists (select from pg_roles where rolname = '${me}') then create role \"${me}\" superuser login; end if; end \$\$;" >&2
fi
echo "postgres://${me}@${socket_dir//\//%2F}:${port}/${DB_NAME}"

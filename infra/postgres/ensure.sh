#!/usr/bin/env bash
# Ensures a local PostgreSQL is running and holds the project's role and database, then prints DATABASE_URL.
# Idempotent: safe to run on every CI run and every `npm test`. Progress goes to stderr; stdout is the URL only.
#
# The database uses UTF-8 with a non-C LC_CTYPE (C.UTF-8) so that pg_trgm indexes CJK characters (DESIGN.md §4).
# The owner role is NOT a superuser; it may create databases (one per test file) and, as a member of
# pg_signal_backend, end other sessions on the databases it drops. Tenant-scoped work switches to the NOLOGIN role
# dc_tenant (SET LOCAL ROLE), which row-level security applies to; the owner is a member of it.
set -euo pipefail

PG_VERSION="${PG_VERSION:-15}"
PG_CLUSTER="${PG_CLUSTER:-main}"
DB_ROLE="${DB_ROLE:-durable}"
DB_PASSWORD="${DB_PASSWORD:-durable}"
DB_NAME="${DB_NAME:-durable_context}"
DB_HOST="${DB_HOST:-127.0.0.1}"

log() { echo "[postgres] $*" >&2; }

as_postgres() {
  if [[ "$(id -un)" == "postgres" ]]; then "$@"; else runuser -u postgres -- "$@"; fi
}

if ! command -v pg_lsclusters >/dev/null 2>&1; then
  log "PostgreSQL $PG_VERSION is not installed (pg_lsclusters missing). On Debian: apt-get install -y postgresql"
  exit 1
fi

if ! pg_lsclusters --no-header | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {found=1} END {exit !found}'; then
  log "creating cluster $PG_VERSION/$PG_CLUSTER"
  pg_createcluster --locale C.UTF-8 "$PG_VERSION" "$PG_CLUSTER" >&2
fi

port="$(pg_lsclusters --no-header | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {print $3}')"
status="$(pg_lsclusters --no-header | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {print $4}')"
if [[ "$status" != online* ]]; then
  log "starting cluster $PG_VERSION/$PG_CLUSTER on port $port"
  pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" start >&2
fi

for _ in $(seq 1 60); do
  if pg_isready -q -h "$DB_HOST" -p "$port"; then break; fi
  sleep 0.5
done
pg_isready -q -h "$DB_HOST" -p "$port" || { log "PostgreSQL did not become ready on port $port"; exit 1; }

psql_admin() { as_postgres psql -v ON_ERROR_STOP=1 -q -X -p "$port" "$@"; }

if [[ "$(psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$DB_ROLE'")" != "1" ]]; then
  log "creating role $DB_ROLE"
  psql_admin -c "CREATE ROLE \"$DB_ROLE\" LOGIN CREATEDB NOSUPERUSER NOBYPASSRLS PASSWORD '$DB_PASSWORD'"
fi

if [[ "$(psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'dc_tenant'")" != "1" ]]; then
  log "creating role dc_tenant"
  psql_admin -c "CREATE ROLE dc_tenant NOLOGIN NOSUPERUSER NOBYPASSRLS"
fi
psql_admin -c "GRANT dc_tenant TO \"$DB_ROLE\"" 2>/dev/null || true

# The owner drops its per-test databases WITH (FORCE), which terminates the sessions still on them; one can be an
# autovacuum worker, which only members of pg_signal_backend may terminate. Granted also to an existing role.
if [[ "$(psql_admin -tAc "SELECT pg_has_role('$DB_ROLE', 'pg_signal_backend', 'MEMBER')")" != "t" ]]; then
  log "granting pg_signal_backend to $DB_ROLE"
  psql_admin -c "GRANT pg_signal_backend TO \"$DB_ROLE\""
fi

if [[ "$(psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" != "1" ]]; then
  log "creating database $DB_NAME (UTF8, LC_CTYPE C.UTF-8)"
  psql_admin -c "CREATE DATABASE \"$DB_NAME\" OWNER \"$DB_ROLE\" ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8' TEMPLATE template0"
fi

# pg_trgm is a trusted extension, but create it as the superuser in template1 and in the database so that
# databases created later by the role (one per test file, from template1) have it too.
for db in template1 "$DB_NAME"; do
  psql_admin -d "$db" -c "CREATE EXTENSION IF NOT EXISTS pg_trgm"
done

echo "postgres://$DB_ROLE:$DB_PASSWORD@$DB_HOST:$port/$DB_NAME"

#!/bin/sh
# Sets up one machine of the highly available layout with pg_auto_failover (Debian's packages
# postgresql-15-auto-failover and pg-auto-failover-cli), as its documentation does: first the
# monitor on its own machine, then the two Postgres nodes, each registering with the monitor (the
# first becomes the primary, the second its synchronous standby). Run as root on each machine:
#   node-setup.sh monitor
#   node-setup.sh node <this machine's name> <monitor host>
# then install pgautofailover.service and start it. The defaults below are examples: change the
# host names, and use --ssl-self-signed or certificates and password authentication across machines.
set -eu

PGDATA=/var/lib/postgresql/15/pgaf
PGPORT=5432
DBNAME=credit
PG_CTL=/usr/lib/postgresql/15/bin/pg_ctl

as_postgres() {
  runuser -u postgres -- "$@"
}

case "${1:-}" in
  monitor)
    as_postgres pg_autoctl create monitor \
      --pgctl "$PG_CTL" \
      --pgdata "$PGDATA" \
      --pgport "$PGPORT" \
      --hostname "$(hostname -f)" \
      --auth scram-sha-256 \
      --ssl-self-signed
    # Faster failure detection than the defaults (monitor.conf, beside this script).
    cat "$(dirname "$0")/monitor.conf" >>"$PGDATA/postgresql.conf"
    ;;
  node)
    name="${2:?the node name, e.g. db1}"
    monitor="${3:?the monitor host}"
    as_postgres pg_autoctl create postgres \
      --pgctl "$PG_CTL" \
      --pgdata "$PGDATA" \
      --pgport "$PGPORT" \
      --hostname "$(hostname -f)" \
      --name "$name" \
      --dbname "$DBNAME" \
      --auth scram-sha-256 \
      --ssl-self-signed \
      --monitor "postgres://autoctl_node@$monitor:$PGPORT/pg_auto_failover?sslmode=require"
    # Cut off from the monitor and the standby this long, a primary stops itself: below the
    # monitor's primary_demote_timeout (monitor.conf), so the standby is promoted only after.
    as_postgres pg_autoctl config set --pgdata "$PGDATA" timeout.network_partition_timeout 6
    ;;
  *)
    echo "usage: $0 monitor | node <name> <monitor host>" >&2
    exit 2
    ;;
esac
# number_sync_standbys stays 0 (the default with one standby): a commit waits for the standby while
# it is up; when it is lost the primary goes on alone (wait_primary) rather than stop writing, and
# the service's /readyz and log say so (README, "High availability and backups").

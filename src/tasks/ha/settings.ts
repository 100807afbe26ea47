// The failover settings of `deno task ha` (and of the HA deployment files, checked against them by
// tests/deploy_ha_test.ts): how fast pg_auto_failover's monitor gives up on a primary, and how soon
// a primary cut off from it stops itself.

/** The database the service uses on both nodes. */
export const HA_DATABASE = "ha";

/**
 * How fast the monitor gives up on a primary (pg_auto_failover's settings, on the monitor): a
 * health check every second, 2 retries 1 s apart, a node unhealthy 6 s after its agent's last
 * report, and the standby promoted 10 s after that (primary_demote_timeout: the time a primary cut
 * off from the monitor has to stop itself, NETWORK_PARTITION_SECONDS, with room to spare; it must
 * stay longer, or a cut-off primary could still take writes when the standby is promoted). The
 * defaults (5 s, 2 s, 20 s, 30 s against 20 s) fail a lost machine over in about 40 s.
 */
export const MONITOR_SETTINGS: Record<string, string> = {
  "pgautofailover.health_check_period": "1000",
  "pgautofailover.health_check_timeout": "1000",
  "pgautofailover.health_check_max_retries": "2",
  "pgautofailover.health_check_retry_delay": "1000",
  "pgautofailover.node_considered_unhealthy_timeout": "6000",
  "pgautofailover.primary_demote_timeout": "10s",
};

/** A primary that cannot reach the monitor (nor its standby) this long stops itself (pg_autoctl). */
export const NETWORK_PARTITION_SECONDS = 6;

-- Run once by the postgres image on a new data directory (compose.yaml). Through PgBouncer in
-- transaction mode the service cannot send its session settings in the startup packet: they are
-- set on its role instead. statement_timeout makes the server give up a statement the service has
-- stopped waiting for (migrate connects directly, with PGOPTIONS='-c statement_timeout=0').
-- plan_cache_mode: each named statement planned once per server connection (docs/operations.md).
ALTER ROLE CURRENT_USER SET statement_timeout = '5s';
ALTER ROLE CURRENT_USER SET plan_cache_mode = force_generic_plan;

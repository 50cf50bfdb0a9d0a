-- The lakeops commit-lock database: a role and a database of its own, beside Airflow's.
--
-- The postgres image runs this once, on the first start with an empty data volume, through
-- psql as the superuser, with the container's environment. The same file provisions a managed
-- server (e.g. RDS), as its admin user:
--   LOCK_DB_PASSWORD=... psql -v ON_ERROR_STOP=1 "host=<server> user=<admin> dbname=postgres" -f infra/postgres/init.sql
--
-- lakeops creates its table (lakeops_locks) itself on first use, so the role owns the database.

\getenv lock_password LOCK_DB_PASSWORD
\if :{?lock_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'init.sql: set LOCK_DB_PASSWORD (the lakeops_lock role''s password)'; END $$;
\endif

CREATE ROLE lakeops_lock LOGIN PASSWORD :'lock_password';
-- Lets a non-superuser admin (RDS) create a database owned by the new role; a no-op otherwise.
GRANT lakeops_lock TO CURRENT_USER;
CREATE DATABASE lakeops_lock OWNER lakeops_lock;
REVOKE ALL ON DATABASE lakeops_lock FROM PUBLIC;

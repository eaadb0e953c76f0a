-- How every model is materialized: one table per model, one domain's rows replaced per run, atomically.
-- Rendered by the DuckDBSqlModel component with `this` (the model), `select` (its rendered SELECT) and `domain`.
CREATE TABLE IF NOT EXISTS {{ this }} AS SELECT * FROM ({{ select }}) AS model WHERE false;
BEGIN TRANSACTION;
DELETE FROM {{ this }} WHERE domain = {{ domain }};
INSERT INTO {{ this }} BY NAME SELECT * FROM ({{ select }}) AS model;
COMMIT;

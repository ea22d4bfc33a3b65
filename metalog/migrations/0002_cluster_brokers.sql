-- The brokers of a cluster sharing this database. Each renews its lease while it runs; a
-- broker whose lease has lapsed is gone from Metadata. `instance` tells two processes
-- claiming one node id apart.
CREATE TABLE cluster_brokers (
    node_id integer PRIMARY KEY,
    instance text NOT NULL,
    listeners text NOT NULL,
    rack text,
    lease_until timestamptz NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);

-- The coordinator's durable state in PostgreSQL: the same KIP-1164 records the local back end
-- appends to its metadata log, one row per group-committed round, plus snapshots of the state
-- and the writer's epoch, which fences a broker that lost the writer role.
CREATE TABLE coordinator_writer (
    id smallint PRIMARY KEY CHECK (id = 1),
    epoch bigint NOT NULL,
    holder text NOT NULL,
    since timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE coordinator_log (
    seq bigint PRIMARY KEY,
    epoch bigint NOT NULL,
    frames bytea NOT NULL,
    crc bigint NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);
-- A snapshot holds the state after every log row up to and including last_seq, in parts
-- (rows of bounded size: a large state would exceed what one bytea value or message holds).
CREATE TABLE coordinator_snapshots (
    last_seq bigint NOT NULL,
    part integer NOT NULL,
    parts integer NOT NULL,
    bytes bytea NOT NULL,
    crc bigint NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (last_seq, part)
);

//! The brokers of a cluster in PostgreSQL (`cluster_brokers`): each holds a lease on its node
//! id, renewed every heartbeat, and the live ones (leases not yet lapsed) are the cluster.

use std::time::Duration;

use shoal_pg::{migrations, Connection, Param, PgConfig, PgError};

use crate::postgres_log::MIGRATIONS;

/// One broker's registration: what the others read of it.
pub struct BrokerRow {
    pub node_id: i32,
    /// Its listeners, in the text the broker wrote.
    pub listeners: String,
    pub rack: Option<String>,
}

/// A connection for the lease, with the schema brought up to date.
pub async fn connect(database: &PgConfig) -> Result<Connection, PgError> {
    let mut connection = Connection::connect(database).await?;
    migrations::apply(&mut connection, &MIGRATIONS).await?;
    Ok(connection)
}

/// Takes or renews `me`'s lease for `lease` as process `instance`; false when another live
/// process holds that node id (a lapsed lease, or our own, may be taken).
pub async fn renew_lease(
    connection: &mut Connection,
    me: &BrokerRow,
    instance: &str,
    lease: Duration,
) -> Result<bool, PgError> {
    let taken = connection
        .query(
            "INSERT INTO cluster_brokers (node_id, instance, listeners, rack, lease_until) \
             VALUES ($1, $2, $3, NULLIF($4, ''), now() + $5::float8 * interval '1 millisecond') \
             ON CONFLICT (node_id) DO UPDATE SET instance = EXCLUDED.instance, \
             listeners = EXCLUDED.listeners, rack = EXCLUDED.rack, \
             lease_until = EXCLUDED.lease_until \
             WHERE cluster_brokers.lease_until < now() \
             OR cluster_brokers.instance = EXCLUDED.instance \
             RETURNING node_id",
            &[
                Param::I32(me.node_id),
                Param::Text(instance),
                Param::Text(&me.listeners),
                Param::Text(me.rack.as_deref().unwrap_or("")),
                Param::I64(lease.as_millis() as i64),
            ],
        )
        .await?;
    Ok(!taken.is_empty())
}

/// The brokers whose leases have not lapsed, by node id.
pub async fn live_brokers(connection: &mut Connection) -> Result<Vec<BrokerRow>, PgError> {
    let rows = connection
        .query(
            "SELECT node_id, listeners, coalesce(rack, '') FROM cluster_brokers \
             WHERE lease_until > now() ORDER BY node_id",
            &[],
        )
        .await?;
    let mut brokers = Vec::with_capacity(rows.len());
    for row in &rows {
        let rack = row.text(2)?;
        brokers.push(BrokerRow {
            node_id: row.i64(0)? as i32,
            listeners: row.text(1)?.to_string(),
            rack: (!rack.is_empty()).then(|| rack.to_string()),
        });
    }
    Ok(brokers)
}

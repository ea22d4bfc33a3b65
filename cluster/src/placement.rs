//! Which broker a client is sent to. Every broker serves every partition, so the choice only
//! spreads load and keeps one partition's readers on one broker's object cache: rendezvous
//! hashing of (topic id, partition) over the live brokers, among those in the client's zone
//! when it names one. A broker joining or leaving moves only the partitions it wins or held.

use uuid::Uuid;

use super::membership::{ClusterView, Member};

/// The zone a client says it is in: `shoal_az=<zone>` anywhere in its `client.id` (as
/// Inkless reads `diskless_az=` and WarpStream `warpstream_az=`), items separated by `,`.
pub fn client_zone(client_id: &str) -> Option<&str> {
    client_id
        .split([',', ';', ' '])
        .find_map(|item| item.strip_prefix("shoal_az="))
        .filter(|zone| !zone.is_empty())
}

impl ClusterView {
    /// The broker to name as `partition`'s leader for a client in `zone`.
    pub fn leader(&self, topic_id: Uuid, partition: i32, zone: Option<&str>) -> Option<&Member> {
        let key = [topic_id.as_bytes().as_slice(), &partition.to_be_bytes()].concat();
        let in_zone = |m: &&Member| zone.is_some() && m.rack.as_deref() == zone;
        let candidates: Vec<&Member> = match self.members.iter().filter(in_zone).count() {
            0 => self.members.iter().collect(),
            _ => self.members.iter().filter(in_zone).collect(),
        };
        rendezvous(&key, candidates)
    }

    /// The broker that coordinates a consumer group (or another keyed role).
    pub fn coordinator(&self, key: &str) -> Option<&Member> {
        rendezvous(key.as_bytes(), self.members.iter().collect())
    }
}

/// The member with the highest hash of (key, node id): stable while both stay.
fn rendezvous<'a>(key: &[u8], members: Vec<&'a Member>) -> Option<&'a Member> {
    members.into_iter().max_by_key(|member| {
        let seed = crc32c::crc32c(&member.node_id.to_be_bytes());
        // Mixed so neighbouring node ids do not win neighbouring keys.
        let hash = crc32c::crc32c_append(seed, key) as u64;
        (
            hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16,
            member.node_id,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(racks: &[(i32, &str)]) -> ClusterView {
        ClusterView {
            members: racks
                .iter()
                .map(|(id, rack)| Member {
                    node_id: *id,
                    listeners: vec![],
                    rack: Some(rack.to_string()),
                })
                .collect(),
        }
    }

    #[test]
    fn a_zone_in_the_client_id_is_found_among_other_items() {
        assert_eq!(client_zone("app-1,shoal_az=b"), Some("b"));
        assert_eq!(client_zone("shoal_az=eu-west-1a"), Some("eu-west-1a"));
        assert_eq!(client_zone("shoal_az="), None);
        assert_eq!(client_zone("rdkafka"), None);
    }

    #[test]
    fn leaders_stay_in_the_clients_zone_spread_and_move_only_when_their_broker_goes() {
        let cluster = view(&[(1, "a"), (2, "b"), (3, "c"), (4, "b")]);
        let topic = Uuid::from_u128(7);
        let mut counts = std::collections::HashMap::new();
        for partition in 0..200 {
            let leader = cluster.leader(topic, partition, Some("b")).unwrap();
            assert_eq!(leader.rack.as_deref(), Some("b"));
            *counts.entry(leader.node_id).or_insert(0) += 1;
        }
        assert!(counts[&2] > 60 && counts[&4] > 60, "{counts:?}");
        // Without a zone (or one with no broker) any broker may lead.
        let anywhere: std::collections::HashSet<i32> = (0..200)
            .map(|p| cluster.leader(topic, p, Some("z")).unwrap().node_id)
            .collect();
        assert_eq!(anywhere.len(), 4);
        // Broker 3 leaves: only the partitions it led move.
        let before: Vec<i32> = (0..200)
            .map(|p| cluster.leader(topic, p, None).unwrap().node_id)
            .collect();
        let smaller = view(&[(1, "a"), (2, "b"), (4, "b")]);
        for (p, leader) in before.iter().enumerate() {
            let now = smaller.leader(topic, p as i32, None).unwrap().node_id;
            if *leader != 3 {
                assert_eq!(now, *leader, "partition {p} moved without cause");
            }
        }
    }
}

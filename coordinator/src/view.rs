//! The topic catalogue as every shard sees it: an immutable snapshot the coordinator replaces
//! after each durable topic change, read lock-free by the shards.

use std::collections::HashMap;
use std::sync::Arc;

use uuid::Uuid;

use crate::records::TopicConfig;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    pub name: String,
    pub id: Uuid,
    pub partitions: i32,
    pub config: TopicConfig,
}

#[derive(Debug, Default)]
pub struct TopicsView {
    by_name: HashMap<String, Arc<TopicMeta>>,
    by_id: HashMap<Uuid, Arc<TopicMeta>>,
}

impl TopicsView {
    pub fn new(topics: impl IntoIterator<Item = TopicMeta>) -> TopicsView {
        let mut view = TopicsView::default();
        for topic in topics {
            let topic = Arc::new(topic);
            view.by_id.insert(topic.id, topic.clone());
            view.by_name.insert(topic.name.clone(), topic);
        }
        view
    }

    pub fn by_name(&self, name: &str) -> Option<&Arc<TopicMeta>> {
        self.by_name.get(name)
    }

    pub fn by_id(&self, id: &Uuid) -> Option<&Arc<TopicMeta>> {
        self.by_id.get(id)
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<TopicMeta>> {
        self.by_name.values()
    }
}

//! ACL bindings as the coordinator keeps them: CreateAcls, DeleteAcls and DescribeAcls.

use super::emit;
use super::CoordinatorState;
use crate::acl::{AclBinding, AclFilter};
use crate::entry::Entry;

impl CoordinatorState {
    pub fn acls(&self) -> impl Iterator<Item = &AclBinding> {
        self.acls.iter()
    }

    /// The entry adding `binding` (None if it exists already), or why it is refused.
    pub fn create_acl(
        &self,
        binding: &AclBinding,
        now_ms: i64,
    ) -> Result<Option<Entry>, &'static str> {
        if let Some(why) = binding.invalid() {
            return Err(why);
        }
        Ok((!self.acls.contains(binding)).then(|| Entry::of(now_ms, emit::acl_created(binding))))
    }

    pub fn matching_acls(&self, filter: &AclFilter) -> Vec<AclBinding> {
        self.acls
            .iter()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect()
    }
}

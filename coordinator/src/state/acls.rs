//! ACL bindings as the coordinator keeps them: CreateAcls, DeleteAcls and DescribeAcls.

use super::CoordinatorState;
use crate::acl::{AclBinding, AclFilter};
use crate::records::Record;

impl CoordinatorState {
    pub fn acls(&self) -> impl Iterator<Item = &AclBinding> {
        self.acls.iter()
    }

    /// The record adding `binding` (None if it exists already), or why it is refused.
    pub fn create_acl(&self, binding: &AclBinding) -> Result<Option<Record>, &'static str> {
        if let Some(why) = binding.invalid() {
            return Err(why);
        }
        Ok((!self.acls.contains(binding)).then(|| Record::AclCreated(binding.clone())))
    }

    pub fn matching_acls(&self, filter: &AclFilter) -> Vec<AclBinding> {
        self.acls
            .iter()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect()
    }
}

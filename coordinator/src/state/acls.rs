//! ACL bindings as the coordinator keeps them: CreateAcls, DeleteAcls and DescribeAcls.

use shoal_protocol::records::{ShoalAclCreatedRecord, ShoalAclDeletedRecord};

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

/// The binding an ACL record (created or deleted: the same fields) carries.
macro_rules! binding_of {
    ($r:expr) => {
        AclBinding {
            resource_type: $r.resource_type,
            resource_name: $r.resource_name.clone(),
            pattern_type: $r.pattern_type,
            principal: $r.principal.clone(),
            host: $r.host.clone(),
            operation: $r.operation,
            permission: $r.permission_type,
        }
    };
}

impl CoordinatorState {
    pub(super) fn apply_acl_created(&mut self, r: &ShoalAclCreatedRecord) {
        self.acls.insert(binding_of!(r));
    }

    pub(super) fn apply_acl_deleted(&mut self, r: &ShoalAclDeletedRecord) {
        self.acls.remove(&binding_of!(r));
    }
}

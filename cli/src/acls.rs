//! `shoal acl list|create|delete`: ACL bindings as `kafka-acls.sh` manages them.

use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use shoal_protocol::acl_codes::{
    ALLOW, ANY, DENY, LITERAL, OPERATION_NAMES, PREFIXED, RESOURCE_NAMES,
};
use shoal_protocol::messages::create_acls_request::AclCreation;
use shoal_protocol::messages::delete_acls_request::DeleteAclsFilter;
use shoal_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};

use super::{check, print_table, Admin, AdminError, Format, Target};

const DESCRIBE_ACLS_VERSION: i16 = 2;
const CREATE_ACLS_VERSION: i16 = 2;
const DELETE_ACLS_VERSION: i16 = 2;

#[derive(clap::Subcommand, Debug)]
pub enum AclCommand {
    /// The bindings matching the filter (all of them without one).
    List(#[command(flatten)] Binding),
    /// Adds a binding for each --operation.
    Create(#[command(flatten)] Binding),
    /// Removes the bindings matching the filter, one filter per --operation.
    Delete(#[command(flatten)] Binding),
}

/// A binding, or a filter for them: what is not given matches anything.
#[derive(clap::Args, Debug)]
pub struct Binding {
    /// e.g. User:alice
    #[arg(long)]
    principal: Option<String>,
    /// Repeatable: read, write, create, delete, alter, describe, all, create-tokens, ...
    #[arg(long = "operation")]
    operations: Vec<String>,
    /// The topic resource (a name, or `*` for every topic).
    #[arg(long, conflicts_with_all = ["group", "cluster", "transactional_id", "delegation_token", "user_principal"])]
    topic: Option<String>,
    /// The consumer group resource.
    #[arg(long, conflicts_with_all = ["cluster", "transactional_id", "delegation_token", "user_principal"])]
    group: Option<String>,
    /// The cluster resource.
    #[arg(long, conflicts_with_all = ["transactional_id", "delegation_token", "user_principal"])]
    cluster: bool,
    /// The transactional id resource.
    #[arg(long, conflicts_with_all = ["delegation_token", "user_principal"])]
    transactional_id: Option<String>,
    /// The delegation token resource, by token id (DESCRIBE lets others see the token).
    #[arg(long, conflicts_with = "user_principal")]
    delegation_token: Option<String>,
    /// The user resource, e.g. User:alice (CREATE_TOKENS and DESCRIBE_TOKENS for that user's
    /// delegation tokens).
    #[arg(long)]
    user_principal: Option<String>,
    /// The name is a prefix (Kafka's PREFIXED pattern), not a literal.
    #[arg(long)]
    prefixed: bool,
    /// Deny instead of allow.
    #[arg(long)]
    deny: bool,
    /// The client host the binding applies to.
    #[arg(long, default_value = "*")]
    host: String,
}

impl Binding {
    /// (resource type, name), or None for any.
    fn resource(&self) -> Option<(i8, String)> {
        let named = |kind: &str, name: &String| {
            let code = RESOURCE_NAMES
                .iter()
                .find(|(n, _)| *n == kind)
                .map(|(_, c)| *c);
            code.map(|c| (c, name.clone()))
        };
        if let Some(t) = &self.topic {
            return named("topic", t);
        }
        if let Some(g) = &self.group {
            return named("group", g);
        }
        if let Some(t) = &self.transactional_id {
            return named("transactional-id", t);
        }
        if let Some(t) = &self.delegation_token {
            return named("delegation-token", t);
        }
        if let Some(u) = &self.user_principal {
            return named("user", u);
        }
        self.cluster.then(|| (4, "kafka-cluster".to_string()))
    }

    fn operation_codes(&self) -> Result<Vec<i8>, AdminError> {
        self.operations
            .iter()
            .map(|o| {
                let o = o.to_lowercase().replace('_', "-");
                OPERATION_NAMES
                    .iter()
                    .find(|(n, _)| *n == o)
                    .map(|(_, c)| *c)
                    .ok_or_else(|| AdminError::Protocol(format!("unknown operation '{o}'")))
            })
            .collect()
    }

    fn pattern(&self) -> i8 {
        if self.prefixed {
            PREFIXED
        } else {
            LITERAL
        }
    }

    fn permission(&self) -> i8 {
        if self.deny {
            DENY
        } else {
            ALLOW
        }
    }
}

fn name_of(table: &[(&'static str, i8)], code: i8) -> String {
    table
        .iter()
        .find(|(_, c)| *c == code)
        .map_or_else(|| code.to_string(), |(n, _)| n.to_string())
}

pub fn run(target: &Target, command: AclCommand) -> Result<(), AdminError> {
    let (mut admin, format) = (target.connect()?, target.format);
    match command {
        AclCommand::List(filter) => list(&mut admin, format, &filter),
        AclCommand::Create(binding) => create(&mut admin, &binding),
        AclCommand::Delete(filter) => delete(&mut admin, format, &filter),
    }
}

fn list(admin: &mut Admin, format: Format, filter: &Binding) -> Result<(), AdminError> {
    let (resource_type, name) = filter.resource().map_or((ANY, None), |(t, n)| (t, Some(n)));
    let operation = filter.operation_codes()?.first().copied().unwrap_or(ANY);
    let request = DescribeAclsRequest::default()
        .with_resource_type_filter(resource_type)
        .with_resource_name_filter(name.map(StrBytes::from_string))
        .with_pattern_type_filter(if filter.prefixed { PREFIXED } else { ANY })
        .with_principal_filter(filter.principal.clone().map(StrBytes::from_string))
        .with_host_filter(None)
        .with_operation(operation)
        .with_permission_type(if filter.deny { DENY } else { ANY });
    let answer = admin.call(DESCRIBE_ACLS_VERSION, &request)?;
    check(
        answer.error_code,
        answer.error_message.as_ref().map(|m| m.as_str()),
    )?;
    let mut rows = Vec::new();
    for r in &answer.resources {
        for a in &r.acls {
            rows.push([
                a.principal.to_string(),
                a.host.to_string(),
                name_of(&RESOURCE_NAMES, r.resource_type),
                r.resource_name.to_string(),
                if r.pattern_type == PREFIXED {
                    "prefixed"
                } else {
                    "literal"
                }
                .to_string(),
                name_of(&OPERATION_NAMES, a.operation),
                if a.permission_type == DENY {
                    "deny"
                } else {
                    "allow"
                }
                .to_string(),
            ]);
        }
    }
    rows.sort();
    match format {
        Format::Json => {
            let list: Vec<_> = rows
                .iter()
                .map(
                    |[principal, host, kind, name, pattern, operation, permission]| {
                        json!({"principal": principal, "host": host, "resource_type": kind,
                           "resource_name": name, "pattern": pattern, "operation": operation,
                           "permission": permission})
                    },
                )
                .collect();
            println!("{}", json!(list));
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
            print_table(
                &[
                    "PRINCIPAL",
                    "HOST",
                    "RESOURCE",
                    "NAME",
                    "PATTERN",
                    "OPERATION",
                    "PERMISSION",
                ],
                &rows,
            );
        }
    }
    Ok(())
}

fn create(admin: &mut Admin, binding: &Binding) -> Result<(), AdminError> {
    let (Some((resource_type, name)), Some(principal)) = (binding.resource(), &binding.principal)
    else {
        return Err(AdminError::Protocol(
            "a binding needs --principal and one of --topic, --group, --cluster, \
             --transactional-id, --delegation-token, --user-principal"
                .into(),
        ));
    };
    let operations = binding.operation_codes()?;
    if operations.is_empty() {
        return Err(AdminError::Protocol(
            "a binding needs an --operation".into(),
        ));
    }
    let creations = operations
        .iter()
        .map(|operation| {
            AclCreation::default()
                .with_resource_type(resource_type)
                .with_resource_name(StrBytes::from_string(name.clone()))
                .with_resource_pattern_type(binding.pattern())
                .with_principal(StrBytes::from_string(principal.clone()))
                .with_host(StrBytes::from_string(binding.host.clone()))
                .with_operation(*operation)
                .with_permission_type(binding.permission())
        })
        .collect();
    let answer = admin.call(
        CREATE_ACLS_VERSION,
        &CreateAclsRequest::default().with_creations(creations),
    )?;
    for r in &answer.results {
        check(r.error_code, r.error_message.as_ref().map(|m| m.as_str()))?;
    }
    println!("created {} ACL binding(s)", answer.results.len());
    Ok(())
}

fn delete(admin: &mut Admin, format: Format, filter: &Binding) -> Result<(), AdminError> {
    let (resource_type, name) = filter.resource().map_or((ANY, None), |(t, n)| (t, Some(n)));
    let mut operations = filter.operation_codes()?;
    if operations.is_empty() {
        operations.push(ANY);
    }
    let filters = operations
        .iter()
        .map(|operation| {
            DeleteAclsFilter::default()
                .with_resource_type_filter(resource_type)
                .with_resource_name_filter(name.clone().map(StrBytes::from_string))
                .with_pattern_type_filter(filter.pattern())
                .with_principal_filter(filter.principal.clone().map(StrBytes::from_string))
                .with_host_filter(None)
                .with_operation(*operation)
                .with_permission_type(filter.permission())
        })
        .collect();
    let answer = admin.call(
        DELETE_ACLS_VERSION,
        &DeleteAclsRequest::default().with_filters(filters),
    )?;
    let mut deleted = 0;
    for r in &answer.filter_results {
        check(r.error_code, r.error_message.as_ref().map(|m| m.as_str()))?;
        deleted += r.matching_acls.len();
    }
    match format {
        Format::Json => println!("{}", json!({"deleted": deleted})),
        Format::Table => println!("deleted {deleted} ACL binding(s)"),
    }
    Ok(())
}

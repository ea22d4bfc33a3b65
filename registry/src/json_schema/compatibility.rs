//! Confluent's rules for JSON Schema changes. A change is compatible when every document the
//! old schema accepts, the new one accepts too: removing constraints, widening `integer` to
//! `number`, extending enums and sums (`anyOf`, `oneOf`), adding properties to a closed
//! content model (`additionalProperties: false`) unless they are required without a default,
//! removing properties from an open one. Tightening any bound, adding a constraint, changing a
//! type, adding a typed property to an open content model (old documents may hold anything
//! under that name) or removing one from a closed model are not. The `errorType`s are
//! Confluent's names.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::model::{kind, Criterion, Kind, Node};
use super::JsonSchema;
use crate::compatibility::Problem;

/// How many pairs of subschemas one check may compare, and for how long: combinations
/// (`anyOf` against `anyOf`) compare every pair, and nest; past either the change is refused
/// as too complex to judge (set the subject's level to NONE to register it).
const COMPARISONS_MAX: usize = 20_000;
const COMPARISON_TIME_MAX: Duration = Duration::from_secs(2);
/// How many `$ref`s in a row a schema may go through.
const REFERENCE_CHAIN_MAX: usize = 32;

/// Why a document `original` accepts may be refused by `update`; empty when none would be.
pub fn problems(original: &JsonSchema, update: &JsonSchema) -> Vec<Problem> {
    let shared = Shared {
        original,
        update,
        budget: Cell::new(COMPARISONS_MAX),
        deadline: Instant::now() + COMPARISON_TIME_MAX,
        assumed: RefCell::new(HashSet::new()),
    };
    let mut diff = Diff {
        shared: &shared,
        problems: Vec::new(),
    };
    diff.compare("#", original.node(), update.node());
    if shared.budget.get() == 0 {
        diff.push(
            "SCHEMA_TOO_COMPLEX",
            "#",
            "The schemas are too large to compare",
        );
    }
    diff.problems
}

struct Shared<'a> {
    original: &'a JsonSchema,
    update: &'a JsonSchema,
    budget: Cell<usize>,
    deadline: Instant,
    /// Pairs of `$ref` targets being compared: met again (a recursive schema), they are
    /// assumed compatible, as the comparison already under way decides.
    assumed: RefCell<HashSet<(usize, usize)>>,
}

struct Diff<'s, 'a> {
    shared: &'s Shared<'a>,
    problems: Vec<Problem>,
}

impl<'s, 'a> Diff<'s, 'a> {
    fn push(&mut self, error_type: &'static str, path: &str, what: &str) {
        self.problems.push(Problem {
            error_type,
            description: format!("{what} at path '{path}'"),
        });
    }

    /// What makes `original` → `update` incompatible, judged apart from this diff's problems.
    fn sub_problems(&self, path: &str, original: Node<'a>, update: Node<'a>) -> Vec<Problem> {
        let mut sub = Diff {
            shared: self.shared,
            problems: Vec::new(),
        };
        sub.compare(path, original, update);
        sub.problems
    }

    fn compare(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        let left = self.shared.budget.get();
        if left == 0 || Instant::now() > self.shared.deadline {
            // Exhausted: `problems` reports it once; nothing below is judged compatible.
            self.shared.budget.set(0);
            return;
        }
        self.shared.budget.set(left - 1);
        let (Some(original), Some(update)) = (
            follow(self.shared.original, original),
            follow(self.shared.update, update),
        ) else {
            self.push("TYPE_CHANGED", path, "A $ref does not resolve");
            return;
        };
        let pair = (
            original.value as *const Value as usize,
            update.value as *const Value as usize,
        );
        if !self.shared.assumed.borrow_mut().insert(pair) {
            return;
        }
        self.compare_resolved(path, original, update);
        self.shared.assumed.borrow_mut().remove(&pair);
    }

    fn compare_resolved(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        let (old, new) = (kind(original), kind(update));
        // A sum in the new schema takes the old one if one of its members does; a
        // combination of one is that one.
        let taken = match (&old, &new) {
            (Kind::Combined(_, members), new) if !matches!(new, Kind::Combined(..)) => {
                members.len() == 1 && self.sub_problems(path, members[0], update).is_empty()
            }
            (Kind::Combined(..), _) => false,
            (_, Kind::Combined(criterion, members))
                if members.len() == 1 || *criterion != Criterion::All =>
            {
                members
                    .iter()
                    .any(|m| self.sub_problems(path, original, *m).is_empty())
            }
            _ => false,
        };
        if taken {
            return;
        }
        match (&old, &new) {
            // The old schema accepted nothing, or the new one accepts anything.
            (Kind::False, _) | (_, Kind::Empty) => {}
            (Kind::Combined(a, old_members), Kind::Combined(b, new_members)) => {
                self.combined(path, (*a, old_members), (*b, new_members));
            }
            (Kind::Not, Kind::Not) => {
                // What the new schema excludes, the old must have excluded too.
                let (Some(a), Some(b)) = (original.child("not"), update.child("not")) else {
                    return;
                };
                if !self.sub_problems(path, b, a).is_empty() {
                    self.push(
                        "NOT_TYPE_EXTENDED",
                        path,
                        "The schema under `not` excludes more",
                    );
                }
            }
            (Kind::Enum, Kind::Enum) => self.enumeration(path, original, update),
            (Kind::Const, Kind::Const) => {
                if original.get("const") != update.get("const") {
                    self.push("CONST_CHANGED", path, "The const value changed");
                }
            }
            (Kind::Combined(..) | Kind::Not | Kind::Enum | Kind::Const | Kind::Empty, _)
            | (_, Kind::Combined(..) | Kind::Not | Kind::Enum | Kind::Const | Kind::False) => {
                self.push("TYPE_CHANGED", path, "The type changed");
            }
            _ => self.typed(path, original, update, &old, &new),
        }
    }

    /// Schemas of one or more plain types (`string`, `object`, ...).
    fn typed(
        &mut self,
        path: &str,
        original: Node<'a>,
        update: Node<'a>,
        old: &Kind<'a>,
        new: &Kind<'a>,
    ) {
        let old_types = alternatives(old);
        let new_types = alternatives(new);
        let several = old_types.len() > 1 || new_types.len() > 1;
        for old_type in &old_types {
            let Some(new_type) = new_types.iter().find(|t| same_type(old_type, t)) else {
                if several {
                    self.push(
                        "SUM_TYPE_NARROWED",
                        path,
                        "A type the old schema allowed is not allowed",
                    );
                } else {
                    self.push("TYPE_CHANGED", path, "The type changed");
                }
                continue;
            };
            match (old_type, new_type) {
                (Kind::String, _) => self.string(path, original, update),
                (Kind::Number(old_integer), Kind::Number(new_integer)) => {
                    self.number(path, original, update);
                    if !old_integer && *new_integer {
                        self.push("TYPE_NARROWED", path, "A number became an integer");
                    }
                }
                (Kind::Object, _) => self.object(path, original, update),
                (Kind::Array, _) => self.array(path, original, update),
                _ => {}
            }
        }
        self.attached_combinations(path, original, update);
    }

    /// `allOf`/`anyOf`/`oneOf` beside a type's own keywords.
    fn attached_combinations(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        for criterion in [Criterion::All, Criterion::Any, Criterion::One] {
            let members = |node: Node<'a>| -> Option<Vec<Node<'a>>> {
                let array = node.get(criterion.keyword())?.as_array()?;
                Some(array.iter().map(|v| node.with(v)).collect())
            };
            let here = format!("{path}/{}", criterion.keyword());
            match (members(original), members(update)) {
                (Some(old), Some(new)) => {
                    self.combined(&here, (criterion, &old), (criterion, &new))
                }
                (None, Some(_)) => {
                    self.push("COMBINED_TYPE_CHANGED", &here, "A combination was added")
                }
                _ => {}
            }
        }
    }

    fn combined(
        &mut self,
        path: &str,
        (old_criterion, old): (Criterion, &[Node<'a>]),
        (new_criterion, new): (Criterion, &[Node<'a>]),
    ) {
        let changed = match (old_criterion, new_criterion) {
            (a, b) if a == b => false,
            (_, Criterion::Any) => false,
            (_, Criterion::One) => old.len() != 1,
            (_, Criterion::All) => !(old.len() == 1 && new.len() == 1),
        };
        if changed {
            self.push(
                "COMBINED_TYPE_CHANGED",
                path,
                "The combination changed to one that accepts less",
            );
            return;
        }
        let old = distinct(old);
        let new = distinct(new);
        if old.len() < new.len() && new_criterion == Criterion::All {
            self.push(
                "PRODUCT_TYPE_EXTENDED",
                path,
                "allOf has more schemas to satisfy",
            );
        } else if old.len() > new.len() && new_criterion != Criterion::All {
            self.push(
                "SUM_TYPE_NARROWED",
                path,
                "The combination has fewer schemas to choose from",
            );
        }
        // Pair old members with new ones they are compatible with, as many as can be.
        let here = format!("{path}/{}", old_criterion.keyword());
        let edges: Vec<Vec<usize>> = old
            .iter()
            .map(|o| {
                (0..new.len())
                    .filter(|&j| self.sub_problems(&here, *o, new[j]).is_empty())
                    .collect()
            })
            .collect();
        if maximum_matching(&edges, new.len()) < old.len().min(new.len()) {
            self.push(
                "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
                &here,
                "The combined schemas changed",
            );
        }
    }

    fn enumeration(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        let values = |node: Node<'a>| node.get("enum").and_then(Value::as_array);
        let (Some(old), Some(new)) = (values(original), values(update)) else {
            return;
        };
        if old.iter().all(|v| new.contains(v)) {
            return;
        }
        if new.iter().all(|v| old.contains(v)) {
            self.push("ENUM_ARRAY_NARROWED", path, "The enum lost values");
        } else {
            self.push("ENUM_ARRAY_CHANGED", path, "The enum changed");
        }
    }

    fn string(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        self.bound(path, original, update, &MAX_LENGTH, true);
        self.bound(path, original, update, &MIN_LENGTH, false);
        match (original.get("pattern"), update.get("pattern")) {
            (None, Some(_)) => self.push("PATTERN_ADDED", path, "A pattern was added"),
            (Some(a), Some(b)) if a != b => {
                self.push("PATTERN_CHANGED", path, "The pattern changed")
            }
            _ => {}
        }
    }

    fn number(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        self.bound(path, original, update, &MAXIMUM, true);
        self.bound(path, original, update, &MINIMUM, false);
        self.bound(path, original, update, &EXCLUSIVE_MAXIMUM, true);
        self.bound(path, original, update, &EXCLUSIVE_MINIMUM, false);
        match (original.number("multipleOf"), update.number("multipleOf")) {
            (None, Some(_)) => self.push("MULTIPLE_OF_ADDED", path, "multipleOf was added"),
            (Some(a), Some(b)) if a != b => {
                // A multiple of the new step is a multiple of the old one only if the old
                // step divides the new one: then fewer numbers pass.
                let divides = |step: f64, of: f64| step != 0.0 && (of / step).fract() == 0.0;
                if divides(a, b) {
                    self.push("MULTIPLE_OF_EXPANDED", path, "multipleOf grew");
                } else if !divides(b, a) {
                    self.push("MULTIPLE_OF_CHANGED", path, "multipleOf changed");
                }
            }
            _ => {}
        }
    }

    fn object(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        let properties = |node: Node<'a>| members_of(node, "properties");
        let required = |node: Node<'a>, key: &str| {
            node.get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(key)))
        };
        let has_default = |node: Node<'a>, key: &str| {
            properties(node)
                .get(key)
                .is_some_and(|p| p.get("default").is_some())
        };
        let (old_properties, new_properties) = (properties(original), properties(update));
        for key in old_properties.keys() {
            if new_properties.contains_key(key)
                && !required(original, key)
                && required(update, key)
                && !has_default(update, key)
            {
                self.push(
                    "REQUIRED_ATTRIBUTE_ADDED",
                    &format!("{path}/required/{key}"),
                    "A property became required without a default",
                );
            }
        }
        for (key, old) in old_properties {
            let here = format!("{path}/properties/{key}");
            let old = original.with(old);
            match new_properties.get(key) {
                Some(new) => self.compare(&here, old, update.with(new)),
                None if open_object(update) => {}
                None => match partial_property_schema(update, key) {
                    Some(covering) => {
                        let found = self.sub_problems(&here, old, covering);
                        if !found.is_empty() {
                            self.problems.extend(found);
                            self.push(
                                "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                                &here,
                                "A removed property's values are not accepted by the new \
                                 schema's additional or pattern properties",
                            );
                        }
                    }
                    None if old.value == &Value::Bool(false) => {}
                    None => self.push(
                        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                        &here,
                        "A property was removed from a closed content model",
                    ),
                },
            }
        }
        for (key, new) in new_properties {
            if old_properties.contains_key(key) {
                continue;
            }
            let here = format!("{path}/properties/{key}");
            let new = update.with(new);
            if open_object(original) {
                if !matches!(kind(new), Kind::Empty) {
                    self.push(
                        "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
                        &here,
                        "A property was added to an open content model, where old documents \
                         may hold any value under its name",
                    );
                }
                continue;
            }
            if let Some(covering) = partial_property_schema(original, key) {
                let found = self.sub_problems(&here, covering, new);
                if !found.is_empty() {
                    self.problems.extend(found);
                    self.push(
                        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                        &here,
                        "An added property does not accept what the old schema's additional \
                         or pattern properties did",
                    );
                }
            }
            if required(update, key) && new.get("default").is_none() {
                self.push(
                    "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
                    &here,
                    "A required property without a default was added",
                );
            }
        }
        self.dependencies(path, original, update);
        self.additional(path, original, update, &ADDITIONAL_PROPERTIES);
        self.bound(path, original, update, &MAX_PROPERTIES, true);
        self.bound(path, original, update, &MIN_PROPERTIES, false);
    }

    fn dependencies(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        let (old, new) = (
            members_of(original, "dependencies"),
            members_of(update, "dependencies"),
        );
        for (key, new_dependency) in new {
            let here = format!("{path}/dependencies/{key}");
            match (old.get(key), new_dependency) {
                (None, Value::Array(_)) => {
                    self.push("DEPENDENCY_ARRAY_ADDED", &here, "A dependency was added")
                }
                (None, _) => self.push("DEPENDENCY_SCHEMA_ADDED", &here, "A dependency was added"),
                (Some(Value::Array(a)), Value::Array(b)) => {
                    if !b.iter().all(|v| a.contains(v)) {
                        self.push(
                            "DEPENDENCY_ARRAY_EXTENDED",
                            &here,
                            "A dependency requires more properties",
                        );
                    }
                }
                (Some(a), b) if a.is_array() != b.is_array() => {
                    self.push("TYPE_CHANGED", &here, "A dependency changed its form")
                }
                (Some(a), b) => self.compare(&here, original.with(a), update.with(b)),
            }
        }
    }

    fn array(&mut self, path: &str, original: Node<'a>, update: Node<'a>) {
        // One schema for every item.
        let all_items = |node: Node<'a>| node.get("items").filter(|v| !v.is_array());
        let here = format!("{path}/items");
        match (all_items(original), all_items(update)) {
            (Some(a), Some(b)) => self.compare(&here, original.with(a), update.with(b)),
            (None, Some(b)) if !matches!(kind(update.with(b)), Kind::Empty) => {
                self.push("TYPE_CHANGED", &here, "The items were given a schema")
            }
            _ => {}
        }
        // Tuples: a schema for each position.
        let tuple = |node: Node<'a>| -> Vec<Node<'a>> {
            node.get("prefixItems")
                .or_else(|| node.get("items").filter(|v| v.is_array()))
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|v| node.with(v)).collect())
                .unwrap_or_default()
        };
        let (old, new) = (tuple(original), tuple(update));
        for index in 0..old.len().max(new.len()) {
            let here = format!("{path}/items/{index}");
            match (old.get(index), new.get(index)) {
                (Some(a), Some(b)) => self.compare(&here, *a, *b),
                (Some(a), None) => {
                    if open_array(update) {
                        continue;
                    }
                    match update
                        .child("additionalItems")
                        .filter(|n| n.value.is_object())
                    {
                        Some(covering) => {
                            if !self.sub_problems(&here, *a, covering).is_empty() {
                                self.push(
                                    "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                                    &here,
                                    "A removed item's values are not accepted by additionalItems",
                                );
                            }
                        }
                        None if a.value == &Value::Bool(false) => {}
                        None => self.push(
                            "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                            &here,
                            "An item was removed from a closed content model",
                        ),
                    }
                }
                (None, Some(b)) => {
                    if open_array(original) {
                        if !matches!(kind(*b), Kind::Empty) {
                            self.push(
                                "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
                                &here,
                                "An item was added to an open content model",
                            );
                        }
                    } else if let Some(covering) = original
                        .child("additionalItems")
                        .filter(|n| n.value.is_object())
                    {
                        if !self.sub_problems(&here, covering, *b).is_empty() {
                            self.push(
                                "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                                &here,
                                "An added item does not accept what additionalItems did",
                            );
                        }
                    }
                }
                (None, None) => {}
            }
        }
        self.additional(path, original, update, &ADDITIONAL_ITEMS);
        self.bound(path, original, update, &MAX_ITEMS, true);
        self.bound(path, original, update, &MIN_ITEMS, false);
        let unique = |node: Node<'a>| node.get("uniqueItems") == Some(&Value::Bool(true));
        if !unique(original) && unique(update) {
            self.push("UNIQUE_ITEMS_ADDED", path, "Items must now be unique");
        }
    }

    /// `additionalProperties` / `additionalItems`: closing, or giving a schema where there was
    /// none, refuses documents the old schema took.
    fn additional(
        &mut self,
        path: &str,
        original: Node<'a>,
        update: Node<'a>,
        additional: &Additional,
    ) {
        let keyword = additional.keyword;
        let here = format!("{path}/{keyword}");
        let permits = |node: Node<'a>| node.get(keyword) != Some(&Value::Bool(false));
        let schema = |node: Node<'a>| node.child(keyword).filter(|n| n.value.is_object());
        if permits(original) && !permits(update) {
            self.push(additional.removed, &here, "The content model was closed");
            return;
        }
        match (schema(original), schema(update)) {
            (None, Some(b)) if permits(original) && !matches!(kind(b), Kind::Empty) => self.push(
                additional.narrowed,
                &here,
                "Additional members were given a schema",
            ),
            (Some(a), Some(b)) => self.compare(&here, a, b),
            _ => {}
        }
    }

    /// A maximum (`upper`) or minimum: adding one, or tightening it, refuses documents.
    fn bound(
        &mut self,
        path: &str,
        original: Node<'a>,
        update: Node<'a>,
        bound: &Bound,
        upper: bool,
    ) {
        let here = format!("{path}/{}", bound.keyword);
        match (
            bound_value(original, bound.keyword),
            bound_value(update, bound.keyword),
        ) {
            (None, Some(_)) => self.push(bound.added, &here, "A bound was added"),
            (Some(a), Some(b)) if (upper && b < a) || (!upper && b > a) => {
                self.push(bound.tightened, &here, "A bound was tightened")
            }
            _ => {}
        }
    }
}

/// A numeric bound; draft-04's boolean `exclusiveMaximum: true` makes `maximum` exclusive,
/// and counts as that number.
fn bound_value(node: Node<'_>, keyword: &str) -> Option<f64> {
    match (keyword, node.get(keyword)?) {
        ("exclusiveMaximum", Value::Bool(true)) => node.number("maximum"),
        ("exclusiveMinimum", Value::Bool(true)) => node.number("minimum"),
        (_, value) => value.as_f64(),
    }
}

/// The object under `keyword` (`properties`, `dependencies`); empty when there is none.
fn members_of<'a>(node: Node<'a>, keyword: &str) -> &'a Map<String, Value> {
    static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);
    node.get(keyword)
        .and_then(Value::as_object)
        .unwrap_or(&EMPTY)
}

/// Follows `$ref`s to the schema they name (None when one does not resolve, or the chain is
/// too long).
fn follow<'a>(schema: &'a JsonSchema, mut node: Node<'a>) -> Option<Node<'a>> {
    for _ in 0..REFERENCE_CHAIN_MAX {
        match kind(node) {
            Kind::Reference(reference) => node = schema.resolve(reference, node.document)?,
            _ => return Some(node),
        }
    }
    None
}

fn alternatives<'a>(kind: &Kind<'a>) -> Vec<Kind<'a>> {
    match kind {
        Kind::Types(types) => types.clone(),
        other => vec![other.clone()],
    }
}

/// Whether two plain types are one for matching (integer and number are both numbers).
fn same_type(a: &Kind<'_>, b: &Kind<'_>) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// An object schema that takes any other property: no pattern properties, and
/// `additionalProperties` absent or `true`.
fn open_object(node: Node<'_>) -> bool {
    node.get("patternProperties").is_none()
        && matches!(
            node.get("additionalProperties"),
            None | Some(Value::Bool(true))
        )
}

fn open_array(node: Node<'_>) -> bool {
    matches!(node.get("additionalItems"), None | Some(Value::Bool(true)))
        && matches!(node.get("unevaluatedItems"), None | Some(Value::Bool(true)))
}

/// The schema a partially open object gives a property it does not list: the first pattern
/// property whose pattern matches, else `additionalProperties` when it is a schema.
fn partial_property_schema<'a>(node: Node<'a>, key: &str) -> Option<Node<'a>> {
    if let Some(patterns) = node.get("patternProperties").and_then(Value::as_object) {
        for (pattern, schema) in patterns {
            let matches = regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .is_ok_and(|r| r.is_match(key));
            if matches {
                return Some(node.with(schema));
            }
        }
    }
    node.child("additionalProperties")
        .filter(|n| n.value.is_object())
}

fn distinct<'a>(members: &[Node<'a>]) -> Vec<Node<'a>> {
    let mut out: Vec<Node<'a>> = Vec::with_capacity(members.len());
    for member in members {
        if !out.iter().any(|m| m.value == member.value) {
            out.push(*member);
        }
    }
    out
}

/// The size of a maximum matching between left (with `edges[i]` the right nodes it may pair
/// with) and `right` nodes: augmenting paths (Kuhn), fine for the handful of members a
/// combination has.
fn maximum_matching(edges: &[Vec<usize>], right: usize) -> usize {
    fn augment(
        i: usize,
        edges: &[Vec<usize>],
        seen: &mut [bool],
        owner: &mut [Option<usize>],
    ) -> bool {
        for &j in &edges[i] {
            if seen[j] {
                continue;
            }
            seen[j] = true;
            if owner[j].is_none_or(|k| augment(k, edges, seen, owner)) {
                owner[j] = Some(i);
                return true;
            }
        }
        false
    }
    let mut owner = vec![None; right];
    (0..edges.len())
        .filter(|&i| augment(i, edges, &mut vec![false; right], &mut owner))
        .count()
}

/// A bound keyword and the names of the changes that refuse documents: adding it, and
/// tightening it (lowering a maximum, raising a minimum).
struct Bound {
    keyword: &'static str,
    added: &'static str,
    tightened: &'static str,
}

const fn bound_of(keyword: &'static str, added: &'static str, tightened: &'static str) -> Bound {
    Bound {
        keyword,
        added,
        tightened,
    }
}

const MAX_LENGTH: Bound = bound_of("maxLength", "MAX_LENGTH_ADDED", "MAX_LENGTH_DECREASED");
const MIN_LENGTH: Bound = bound_of("minLength", "MIN_LENGTH_ADDED", "MIN_LENGTH_INCREASED");
const MAXIMUM: Bound = bound_of("maximum", "MAXIMUM_ADDED", "MAXIMUM_DECREASED");
const MINIMUM: Bound = bound_of("minimum", "MINIMUM_ADDED", "MINIMUM_INCREASED");
const EXCLUSIVE_MAXIMUM: Bound = bound_of(
    "exclusiveMaximum",
    "EXCLUSIVE_MAXIMUM_ADDED",
    "EXCLUSIVE_MAXIMUM_DECREASED",
);
const EXCLUSIVE_MINIMUM: Bound = bound_of(
    "exclusiveMinimum",
    "EXCLUSIVE_MINIMUM_ADDED",
    "EXCLUSIVE_MINIMUM_INCREASED",
);
const MAX_PROPERTIES: Bound = bound_of(
    "maxProperties",
    "MAX_PROPERTIES_ADDED",
    "MAX_PROPERTIES_DECREASED",
);
const MIN_PROPERTIES: Bound = bound_of(
    "minProperties",
    "MIN_PROPERTIES_ADDED",
    "MIN_PROPERTIES_INCREASED",
);
const MAX_ITEMS: Bound = bound_of("maxItems", "MAX_ITEMS_ADDED", "MAX_ITEMS_DECREASED");
const MIN_ITEMS: Bound = bound_of("minItems", "MIN_ITEMS_ADDED", "MIN_ITEMS_INCREASED");

/// `additionalProperties` or `additionalItems`, and the names of closing it and of giving it
/// a schema where it took anything.
struct Additional {
    keyword: &'static str,
    removed: &'static str,
    narrowed: &'static str,
}

const ADDITIONAL_PROPERTIES: Additional = Additional {
    keyword: "additionalProperties",
    removed: "ADDITIONAL_PROPERTIES_REMOVED",
    narrowed: "ADDITIONAL_PROPERTIES_NARROWED",
};
const ADDITIONAL_ITEMS: Additional = Additional {
    keyword: "additionalItems",
    removed: "ADDITIONAL_ITEMS_REMOVED",
    narrowed: "ADDITIONAL_ITEMS_NARROWED",
};

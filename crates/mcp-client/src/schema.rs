//! JSON Schema validation of what crosses the gateway: a tool's input before it is sent,
//! its structured output against its output schema, and an elicitation's answer before
//! the server gets it (spec/peers.md: never hand a server what its own schema rejects).
//!
//! A validator of our own rather than a general-purpose crate: the `jsonschema` crate
//! brought its own regex engine, big-number arithmetic, URI resolution and format
//! checkers, about a tenth of the binary (BENCHMARKS.md "Binary size"), for schemas that
//! are, in MCP, one document without remote references. Its error messages are kept word
//! for word (`/a: "x" is not of type "integer"`), and its behaviour is checked against it
//! in this module's tests.
//!
//! What is checked: every assertion and applicator of drafts 4, 6, 7, 2019-09 and 2020-12
//! (`$schema` picks the draft; without one, 2020-12, MCP's default dialect), with `$ref`
//! to the document itself (JSON pointers, `$anchor`s, the `$id`s it declares). What is
//! not: `format`, `content*` and the `unevaluated*` keywords (annotations here, so they
//! never reject), and a `pattern` the `regex` crate cannot compile (ECMA-262 look-around
//! or back-references), which is skipped rather than making the tool unusable. A `$ref`
//! that names another document is refused when the schema is compiled, as before.

use std::collections::HashMap;
use std::fmt::Write as _;

use regex::Regex;
use serde_json::{Map, Value};

/// How deep validation may nest (subschemas and references followed) before it stops
/// with an error: a schema that refers to itself without descending into the instance
/// would otherwise never end.
const MAX_DEPTH: usize = 256;

/// The enum values an error message lists before it says how many others there are.
const MAX_ENUM_SHOWN: usize = 3;

/// The drafts whose rules differ in what we check.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Draft {
    Draft4,
    Draft6,
    Draft7,
    Draft2019,
    Draft2020,
}

/// A compiled schema.
#[derive(Debug)]
pub(crate) struct Schema {
    root: Value,
    draft: Draft,
    /// Every `pattern` and `patternProperties` key that compiles.
    regexes: HashMap<String, Regex>,
    /// `$anchor` (and `$dynamicAnchor`, and pre-2019 `$id: "#name"`) to the JSON pointer
    /// of the subschema that declares it.
    anchors: HashMap<String, String>,
    /// The `$id`s the document declares (without a fragment) to their subschema's pointer.
    ids: HashMap<String, String>,
}

/// One way an instance fails its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValidationError {
    /// The JSON pointer of the failing part of the instance; empty for the whole.
    pub(crate) instance_path: String,
    /// What is wrong, in the words of the `jsonschema` crate.
    pub(crate) message: String,
}

impl std::fmt::Display for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Schema {
    /// Compiles `schema`, or says why it is not a JSON Schema we can apply.
    pub(crate) fn compile(schema: &Value) -> Result<Schema, String> {
        let draft = match schema.get("$schema").and_then(Value::as_str) {
            Some(uri) if uri.contains("draft-04") => Draft::Draft4,
            Some(uri) if uri.contains("draft-06") => Draft::Draft6,
            Some(uri) if uri.contains("draft-07") => Draft::Draft7,
            Some(uri) if uri.contains("2019-09") => Draft::Draft2019,
            _ => Draft::Draft2020,
        };
        let mut compiled = Schema {
            root: schema.clone(),
            draft,
            regexes: HashMap::new(),
            anchors: HashMap::new(),
            ids: HashMap::new(),
        };
        let mut refs = Vec::new();
        compiled.scan(schema, &mut String::new(), &mut refs, 0)?;
        for reference in refs {
            if compiled.resolve(&reference).is_none() {
                return Err(format!("Unresolvable reference: {reference}"));
            }
        }
        Ok(compiled)
    }

    /// Whether `instance` is valid.
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        let mut errors = Errors::new(1);
        self.validate(&self.root, instance, &mut Vec::new(), &mut errors, 0);
        errors.list.is_empty()
    }

    /// Up to `limit` of the ways `instance` fails, in the order the schema names them.
    pub(crate) fn errors(&self, instance: &Value, limit: usize) -> Vec<ValidationError> {
        let mut errors = Errors::new(limit.max(1));
        self.validate(&self.root, instance, &mut Vec::new(), &mut errors, 0);
        errors.list
    }

    /// Checks the shape of every keyword we apply, collects anchors, ids and patterns,
    /// and the references to resolve once the whole document has been seen.
    fn scan(
        &mut self,
        schema: &Value,
        pointer: &mut String,
        refs: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("the schema nests deeper than {MAX_DEPTH} levels"));
        }
        let object = match schema {
            Value::Bool(_) => return Ok(()),
            Value::Object(object) => object,
            other => return Err(format!("{other} is not of types \"boolean\", \"object\"")),
        };
        let id_key = if self.draft == Draft::Draft4 { "id" } else { "$id" };
        if let Some(id) = object.get(id_key).and_then(Value::as_str) {
            match id.split_once('#') {
                Some((base, anchor)) => {
                    if !base.is_empty() {
                        self.ids.insert(base.to_string(), pointer.clone());
                    }
                    if !anchor.is_empty() && !anchor.starts_with('/') {
                        self.anchors.insert(anchor.to_string(), pointer.clone());
                    }
                }
                None => {
                    self.ids.insert(id.to_string(), pointer.clone());
                }
            }
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(anchor) = object.get(key) {
                let anchor = anchor
                    .as_str()
                    .ok_or_else(|| format!("{anchor} is not of type \"string\""))?;
                self.anchors.insert(anchor.to_string(), pointer.clone());
            }
        }
        for (key, value) in object {
            match key.as_str() {
                "$ref" | "$dynamicRef" => {
                    let reference = value
                        .as_str()
                        .ok_or_else(|| format!("{value} is not of type \"string\""))?;
                    refs.push(reference.to_string());
                }
                "type" => check_type_keyword(value)?,
                "required" => strings(value)?,
                "enum" if !value.is_array() => return Err(format!("{value} is not of type \"array\"")),
                "minimum" | "maximum" | "multipleOf" => number(value)?,
                "exclusiveMinimum" | "exclusiveMaximum"
                    if !(value.is_number() || (self.draft == Draft::Draft4 && value.is_boolean())) =>
                {
                    return Err(format!("{value} is not of type \"number\""));
                }
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties"
                | "minContains" | "maxContains" => count(value)?,
                "uniqueItems" if !value.is_boolean() => {
                    return Err(format!("{value} is not of type \"boolean\""));
                }
                "pattern" => {
                    let pattern = value
                        .as_str()
                        .ok_or_else(|| format!("{value} is not of type \"string\""))?;
                    self.add_regex(pattern);
                }
                "properties" | "$defs" | "definitions" | "dependentSchemas" => {
                    let members = value
                        .as_object()
                        .ok_or_else(|| format!("{value} is not of type \"object\""))?;
                    for (name, subschema) in members {
                        self.scan_at(subschema, pointer, &[key, name], refs, depth)?;
                    }
                }
                "patternProperties" => {
                    let members = value
                        .as_object()
                        .ok_or_else(|| format!("{value} is not of type \"object\""))?;
                    for (pattern, subschema) in members {
                        self.add_regex(pattern);
                        self.scan_at(subschema, pointer, &[key, pattern], refs, depth)?;
                    }
                }
                "dependencies" => {
                    let members = value
                        .as_object()
                        .ok_or_else(|| format!("{value} is not of type \"object\""))?;
                    for (name, dependency) in members {
                        if dependency.is_array() {
                            strings(dependency)?;
                        } else {
                            self.scan_at(dependency, pointer, &[key, name], refs, depth)?;
                        }
                    }
                }
                "dependentRequired" => {
                    let members = value
                        .as_object()
                        .ok_or_else(|| format!("{value} is not of type \"object\""))?;
                    for dependency in members.values() {
                        strings(dependency)?;
                    }
                }
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    let list = value
                        .as_array()
                        .ok_or_else(|| format!("{value} is not of type \"array\""))?;
                    if list.is_empty() {
                        return Err(format!("{value} has less than 1 item"));
                    }
                    for (index, subschema) in list.iter().enumerate() {
                        self.scan_at(subschema, pointer, &[key, &index.to_string()], refs, depth)?;
                    }
                }
                "items" => match value {
                    Value::Array(list) => {
                        for (index, subschema) in list.iter().enumerate() {
                            self.scan_at(subschema, pointer, &[key, &index.to_string()], refs, depth)?;
                        }
                    }
                    subschema => self.scan_at(subschema, pointer, &[key], refs, depth)?,
                },
                "additionalProperties"
                | "additionalItems"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "unevaluatedProperties"
                | "unevaluatedItems" => {
                    self.scan_at(value, pointer, &[key], refs, depth)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// [`Schema::scan`] of the subschema at `pointer` + `tokens`.
    fn scan_at(
        &mut self,
        schema: &Value,
        pointer: &mut String,
        tokens: &[&str],
        refs: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        let length = pointer.len();
        for token in tokens {
            pointer.push('/');
            push_escaped(pointer, token);
        }
        let scanned = self.scan(schema, pointer, refs, depth + 1);
        pointer.truncate(length);
        scanned
    }

    fn add_regex(&mut self, pattern: &str) {
        if !self.regexes.contains_key(pattern)
            && let Ok(regex) = Regex::new(pattern)
        {
            self.regexes.insert(pattern.to_string(), regex);
        }
    }

    /// The subschema a `$ref` names, if it is in this document.
    fn resolve(&self, reference: &str) -> Option<&Value> {
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let document = if base.is_empty() || self.root_id().is_some_and(|id| id == base) {
            &self.root
        } else {
            self.root.pointer(self.ids.get(base)?)?
        };
        let fragment = percent_decode(fragment)?;
        if fragment.is_empty() {
            Some(document)
        } else if fragment.starts_with('/') {
            document.pointer(&fragment)
        } else {
            self.root.pointer(self.anchors.get(&fragment)?)
        }
    }

    fn root_id(&self) -> Option<&str> {
        let key = if self.draft == Draft::Draft4 { "id" } else { "$id" };
        let id = self.root.get(key)?.as_str()?;
        Some(id.split_once('#').map_or(id, |(base, _)| base))
    }

    /// Adds to `errors` every way `instance` (at `path`) fails `schema`.
    fn validate(&self, schema: &Value, instance: &Value, path: &mut Vec<String>, errors: &mut Errors, depth: usize) {
        if errors.full() {
            return;
        }
        if depth > MAX_DEPTH {
            errors.push(path, format!("the schema nests deeper than {MAX_DEPTH} levels"));
            return;
        }
        let object = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                errors.push(path, format!("False schema does not allow {instance}"));
                return;
            }
            Value::Object(object) => object,
            // Refused by `compile`.
            _ => return,
        };
        // Before 2019-09 a `$ref` stands alone: its siblings are ignored.
        let reference_only = self.draft <= Draft::Draft7 && object.contains_key("$ref");
        for (key, value) in object {
            if errors.full() {
                return;
            }
            if reference_only && key != "$ref" {
                continue;
            }
            self.keyword(object, key, value, instance, path, errors, depth);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn keyword(
        &self,
        schema: &Map<String, Value>,
        key: &str,
        value: &Value,
        instance: &Value,
        path: &mut Vec<String>,
        errors: &mut Errors,
        depth: usize,
    ) {
        match key {
            "$ref" | "$dynamicRef" => {
                let Some(target) = value.as_str().and_then(|reference| self.resolve(reference)) else {
                    return;
                };
                self.validate(target, instance, path, errors, depth + 1);
            }
            "type" => {
                let fits = match value {
                    Value::String(name) => self.is_type(instance, name),
                    Value::Array(names) => names
                        .iter()
                        .filter_map(Value::as_str)
                        .any(|name| self.is_type(instance, name)),
                    _ => true,
                };
                if !fits {
                    let message = match value {
                        Value::String(name) => format!("{instance} is not of type \"{name}\""),
                        Value::Array(names) => {
                            // In the reference's fixed order of types, not the schema's.
                            let names: Vec<String> = TYPES
                                .iter()
                                .filter(|known| names.iter().any(|name| name.as_str() == Some(known)))
                                .map(|name| format!("\"{name}\""))
                                .collect();
                            format!("{instance} is not of types {}", names.join(", "))
                        }
                        _ => return,
                    };
                    errors.push(path, message);
                }
            }
            "enum" => {
                let Some(options) = value.as_array() else { return };
                if !options.iter().any(|option| equal(option, instance)) {
                    errors.push(path, enum_message(instance, options));
                }
            }
            "const" if !equal(value, instance) => {
                errors.push(path, format!("{value} was expected"));
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                self.bound(schema, key, value, instance, path, errors);
            }
            "multipleOf" => {
                let (Some(x), Some(m)) = (instance.as_f64(), value.as_f64()) else {
                    return;
                };
                if !is_multiple(instance, x, value, m) {
                    errors.push(path, format!("{instance} is not a multiple of {m}"));
                }
            }
            "minLength" | "maxLength" => {
                let (Some(text), Some(limit)) = (instance.as_str(), value.as_u64()) else {
                    return;
                };
                let length = text.chars().count() as u64;
                let plural = if limit == 1 { "" } else { "s" };
                if key == "minLength" && length < limit {
                    errors.push(path, format!("{instance} is shorter than {limit} character{plural}"));
                } else if key == "maxLength" && length > limit {
                    errors.push(path, format!("{instance} is longer than {limit} character{plural}"));
                }
            }
            "pattern" => {
                let (Some(text), Some(pattern)) = (instance.as_str(), value.as_str()) else {
                    return;
                };
                if let Some(regex) = self.regexes.get(pattern)
                    && !regex.is_match(text)
                {
                    errors.push(path, format!("{instance} does not match \"{pattern}\""));
                }
            }
            "minItems" | "maxItems" => {
                let (Some(items), Some(limit)) = (instance.as_array(), value.as_u64()) else {
                    return;
                };
                let plural = if limit == 1 { "" } else { "s" };
                let length = items.len() as u64;
                if key == "minItems" && length < limit {
                    errors.push(path, format!("{instance} has less than {limit} item{plural}"));
                } else if key == "maxItems" && length > limit {
                    errors.push(path, format!("{instance} has more than {limit} item{plural}"));
                }
            }
            "uniqueItems" => {
                let Some(items) = instance.as_array() else { return };
                if value == &Value::Bool(true)
                    && items
                        .iter()
                        .enumerate()
                        .any(|(i, a)| items[i + 1..].iter().any(|b| equal(a, b)))
                {
                    errors.push(path, format!("{instance} has non-unique elements"));
                }
            }
            "items" => {
                let Some(items) = instance.as_array() else { return };
                match value {
                    Value::Array(tuple) => {
                        for (index, (item, subschema)) in items.iter().zip(tuple).enumerate() {
                            self.at(path, index.to_string(), |path| {
                                self.validate(subschema, item, path, errors, depth + 1)
                            });
                        }
                    }
                    subschema => {
                        let skip = match schema.get("prefixItems") {
                            Some(Value::Array(prefix)) => prefix.len(),
                            _ => 0,
                        };
                        for (index, item) in items.iter().enumerate().skip(skip) {
                            self.at(path, index.to_string(), |path| {
                                self.validate(subschema, item, path, errors, depth + 1)
                            });
                        }
                    }
                }
            }
            "prefixItems" => {
                let (Some(items), Some(prefix)) = (instance.as_array(), value.as_array()) else {
                    return;
                };
                for (index, (item, subschema)) in items.iter().zip(prefix).enumerate() {
                    self.at(path, index.to_string(), |path| {
                        self.validate(subschema, item, path, errors, depth + 1)
                    });
                }
            }
            "additionalItems" => {
                let (Some(items), Some(Value::Array(tuple))) = (instance.as_array(), schema.get("items")) else {
                    return;
                };
                if items.len() <= tuple.len() {
                    return;
                }
                if value == &Value::Bool(false) {
                    let extra: Vec<String> = items[tuple.len()..].iter().map(Value::to_string).collect();
                    let were = if extra.len() == 1 { "was" } else { "were" };
                    errors.push(
                        path,
                        format!(
                            "Additional items are not allowed ({} {were} unexpected)",
                            extra.join(", ")
                        ),
                    );
                    return;
                }
                for (index, item) in items.iter().enumerate().skip(tuple.len()) {
                    self.at(path, index.to_string(), |path| {
                        self.validate(value, item, path, errors, depth + 1)
                    });
                }
            }
            "contains" => {
                let Some(items) = instance.as_array() else { return };
                let matching = items.iter().filter(|item| self.valid(value, item, depth)).count() as u64;
                let min = schema.get("minContains").and_then(Value::as_u64).unwrap_or(1);
                let max = schema.get("maxContains").and_then(Value::as_u64);
                let too_many = self.draft >= Draft::Draft2019 && max.is_some_and(|max| matching > max);
                let too_few = if self.draft >= Draft::Draft2019 {
                    matching < min
                } else {
                    matching == 0
                };
                if too_few || too_many {
                    errors.push(path, format!("None of {instance} are valid under the given schema"));
                }
            }
            "minProperties" | "maxProperties" => {
                let (Some(members), Some(limit)) = (instance.as_object(), value.as_u64()) else {
                    return;
                };
                let plural = if limit == 1 { "y" } else { "ies" };
                let length = members.len() as u64;
                if key == "minProperties" && length < limit {
                    errors.push(path, format!("{instance} has less than {limit} propert{plural}"));
                } else if key == "maxProperties" && length > limit {
                    errors.push(path, format!("{instance} has more than {limit} propert{plural}"));
                }
            }
            "required" => {
                let (Some(members), Some(required)) = (instance.as_object(), value.as_array()) else {
                    return;
                };
                for name in required {
                    if let Some(name) = name.as_str()
                        && !members.contains_key(name)
                    {
                        errors.push(
                            path,
                            format!("{} is a required property", Value::String(name.to_string())),
                        );
                    }
                }
            }
            "properties" => {
                let (Some(members), Some(properties)) = (instance.as_object(), value.as_object()) else {
                    return;
                };
                for (name, subschema) in properties {
                    if let Some(member) = members.get(name) {
                        self.at(path, name.clone(), |path| {
                            self.validate(subschema, member, path, errors, depth + 1)
                        });
                    }
                }
            }
            "patternProperties" => {
                let (Some(members), Some(patterns)) = (instance.as_object(), value.as_object()) else {
                    return;
                };
                for (pattern, subschema) in patterns {
                    let Some(regex) = self.regexes.get(pattern) else {
                        continue;
                    };
                    for (name, member) in members.iter().filter(|(name, _)| regex.is_match(name)) {
                        self.at(path, name.clone(), |path| {
                            self.validate(subschema, member, path, errors, depth + 1)
                        });
                    }
                }
            }
            "additionalProperties" => {
                let Some(members) = instance.as_object() else { return };
                let extra: Vec<(&String, &Value)> = members
                    .iter()
                    .filter(|(name, _)| !self.declared(schema, name))
                    .collect();
                if extra.is_empty() {
                    return;
                }
                if value == &Value::Bool(false) {
                    let names: Vec<String> = extra.iter().map(|(name, _)| format!("'{name}'")).collect();
                    let were = if names.len() == 1 { "was" } else { "were" };
                    errors.push(
                        path,
                        format!(
                            "Additional properties are not allowed ({} {were} unexpected)",
                            names.join(", ")
                        ),
                    );
                    return;
                }
                for (name, member) in extra {
                    self.at(path, name.clone(), |path| {
                        self.validate(value, member, path, errors, depth + 1)
                    });
                }
            }
            "propertyNames" => {
                let Some(members) = instance.as_object() else { return };
                for name in members.keys() {
                    self.validate(value, &Value::String(name.clone()), path, errors, depth + 1);
                }
            }
            "dependentRequired" | "dependencies" | "dependentSchemas" => {
                let (Some(members), Some(dependencies)) = (instance.as_object(), value.as_object()) else {
                    return;
                };
                for (name, dependency) in dependencies {
                    if !members.contains_key(name) {
                        continue;
                    }
                    match dependency {
                        Value::Array(required) if key != "dependentSchemas" => {
                            for needed in required.iter().filter_map(Value::as_str) {
                                if !members.contains_key(needed) {
                                    let needed = Value::String(needed.to_string());
                                    errors.push(path, format!("{needed} is a required property"));
                                }
                            }
                        }
                        subschema if key != "dependentRequired" => {
                            self.validate(subschema, instance, path, errors, depth + 1);
                        }
                        _ => {}
                    }
                }
            }
            "allOf" => {
                for subschema in value.as_array().into_iter().flatten() {
                    self.validate(subschema, instance, path, errors, depth + 1);
                }
            }
            "anyOf" => {
                let Some(options) = value.as_array() else { return };
                if !options.iter().any(|subschema| self.valid(subschema, instance, depth)) {
                    errors.push(
                        path,
                        format!("{instance} is not valid under any of the schemas listed in the 'anyOf' keyword"),
                    );
                }
            }
            "oneOf" => {
                let Some(options) = value.as_array() else { return };
                let matching = options
                    .iter()
                    .filter(|subschema| self.valid(subschema, instance, depth))
                    .take(2)
                    .count();
                if matching == 0 {
                    errors.push(
                        path,
                        format!("{instance} is not valid under any of the schemas listed in the 'oneOf' keyword"),
                    );
                } else if matching > 1 {
                    errors.push(
                        path,
                        format!("{instance} is valid under more than one of the schemas listed in the 'oneOf' keyword"),
                    );
                }
            }
            "not" if self.valid(value, instance, depth) => {
                errors.push(path, format!("{value} is not allowed for {instance}"));
            }
            "if" => {
                let branch = if self.valid(value, instance, depth) {
                    "then"
                } else {
                    "else"
                };
                if let Some(subschema) = schema.get(branch) {
                    self.validate(subschema, instance, path, errors, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// `minimum`, `maximum` and their exclusive forms (draft 4: booleans on the others).
    fn bound(
        &self,
        schema: &Map<String, Value>,
        key: &str,
        value: &Value,
        instance: &Value,
        path: &[String],
        errors: &mut Errors,
    ) {
        let Some(x) = instance.as_f64().filter(|_| instance.is_number()) else {
            return;
        };
        let exclusive = |name: &str| self.draft == Draft::Draft4 && schema.get(name) == Some(&Value::Bool(true));
        let Some(limit) = value.as_f64() else { return };
        let message = match key {
            "minimum" if exclusive("exclusiveMinimum") => (compare(instance, x, value, limit)
                != std::cmp::Ordering::Greater)
                .then_some("is less than or equal to the minimum of"),
            "maximum" if exclusive("exclusiveMaximum") => (compare(instance, x, value, limit)
                != std::cmp::Ordering::Less)
                .then_some("is greater than or equal to the maximum of"),
            "minimum" => (compare(instance, x, value, limit) == std::cmp::Ordering::Less)
                .then_some("is less than the minimum of"),
            "maximum" => (compare(instance, x, value, limit) == std::cmp::Ordering::Greater)
                .then_some("is greater than the maximum of"),
            "exclusiveMinimum" => (compare(instance, x, value, limit) != std::cmp::Ordering::Greater)
                .then_some("is less than or equal to the minimum of"),
            "exclusiveMaximum" => (compare(instance, x, value, limit) != std::cmp::Ordering::Less)
                .then_some("is greater than or equal to the maximum of"),
            _ => None,
        };
        if let Some(message) = message {
            errors.push(path, format!("{instance} {message} {value}"));
        }
    }

    /// Whether `name` is covered by the `properties` or `patternProperties` beside an
    /// `additionalProperties`.
    fn declared(&self, schema: &Map<String, Value>, name: &str) -> bool {
        schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key(name))
            || schema
                .get("patternProperties")
                .and_then(Value::as_object)
                .is_some_and(|patterns| {
                    patterns
                        .keys()
                        .any(|pattern| self.regexes.get(pattern).is_some_and(|regex| regex.is_match(name)))
                })
    }

    fn is_type(&self, instance: &Value, name: &str) -> bool {
        match name {
            "null" => instance.is_null(),
            "boolean" => instance.is_boolean(),
            "object" => instance.is_object(),
            "array" => instance.is_array(),
            "string" => instance.is_string(),
            "number" => instance.is_number(),
            "integer" => match instance {
                Value::Number(number) => {
                    number.is_i64()
                        || number.is_u64()
                        || (self.draft > Draft::Draft4 && number.as_f64().is_some_and(|x| x.fract() == 0.0))
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `instance` fits `schema`, stopping at its first error.
    fn valid(&self, schema: &Value, instance: &Value, depth: usize) -> bool {
        let mut errors = Errors::new(1);
        self.validate(schema, instance, &mut Vec::new(), &mut errors, depth + 1);
        errors.list.is_empty()
    }

    /// Runs `f` with `token` pushed on `path`.
    fn at(&self, path: &mut Vec<String>, token: String, f: impl FnOnce(&mut Vec<String>)) {
        path.push(token);
        f(path);
        path.pop();
    }
}

/// Errors found so far, up to a limit.
struct Errors {
    list: Vec<ValidationError>,
    limit: usize,
}

impl Errors {
    fn new(limit: usize) -> Errors {
        Errors {
            list: Vec::new(),
            limit,
        }
    }

    fn full(&self) -> bool {
        self.list.len() >= self.limit
    }

    fn push(&mut self, path: &[String], message: String) {
        if self.full() {
            return;
        }
        let mut instance_path = String::new();
        for token in path {
            instance_path.push('/');
            push_escaped(&mut instance_path, token);
        }
        self.list.push(ValidationError { instance_path, message });
    }
}

/// Appends a JSON pointer token (RFC 6901: `~` as `~0`, `/` as `~1`).
fn push_escaped(pointer: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// A URI fragment with its `%XX` escapes decoded; `None` if they do not make UTF-8.
fn percent_decode(fragment: &str) -> Option<String> {
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = fragment.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            decoded.push(byte);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// The type names, in the order the `jsonschema` crate lists them in a message.
const TYPES: [&str; 7] = ["null", "boolean", "integer", "number", "string", "array", "object"];

fn check_type_keyword(value: &Value) -> Result<(), String> {
    let known = |name: &Value| name.as_str().is_some_and(|name| TYPES.contains(&name));
    let fine = match value {
        Value::String(_) => known(value),
        Value::Array(names) => names.iter().all(known),
        _ => false,
    };
    if fine {
        Ok(())
    } else {
        Err(format!(
            "{value} is not valid under any of the schemas listed in the 'anyOf' keyword"
        ))
    }
}

fn strings(value: &Value) -> Result<(), String> {
    match value {
        Value::Array(items) if items.iter().all(Value::is_string) => Ok(()),
        Value::Array(items) => {
            let bad = items.iter().find(|item| !item.is_string()).unwrap_or(value);
            Err(format!("{bad} is not of type \"string\""))
        }
        other => Err(format!("{other} is not of type \"array\"")),
    }
}

fn number(value: &Value) -> Result<(), String> {
    if value.is_number() {
        Ok(())
    } else {
        Err(format!("{value} is not of type \"number\""))
    }
}

fn count(value: &Value) -> Result<(), String> {
    if value.is_u64() || value.as_f64().is_some_and(|x| x >= 0.0 && x.fract() == 0.0) {
        Ok(())
    } else {
        Err(format!("{value} is not of type \"integer\""))
    }
}

/// JSON equality, numbers by value (`1` equals `1.0`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(key, a)| y.get(key).is_some_and(|b| equal(a, b)))
        }
        (a, b) => a == b,
    }
}

/// Compares two JSON numbers, exactly where both are integers.
fn compare(a: &Value, x: f64, b: &Value, y: f64) -> std::cmp::Ordering {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        a.cmp(&b)
    } else if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        a.cmp(&b)
    } else {
        x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
    }
}

/// Whether `instance` (`x`) is a multiple of `divisor` (`m`): exactly for integers, and
/// within rounding for fractions (`0.3` is a multiple of `0.1`).
fn is_multiple(instance: &Value, x: f64, divisor: &Value, m: f64) -> bool {
    if let (Some(a), Some(b)) = (instance.as_i64(), divisor.as_i64()) {
        return b == 0 || a % b == 0;
    }
    if m == 0.0 {
        return true;
    }
    let quotient = x / m;
    if !quotient.is_finite() {
        return false;
    }
    (quotient - quotient.round()).abs() <= quotient.abs().max(1.0) * 1e-9
}

/// `"x" is not one of "a", "b" or "c"`, naming at most three options.
fn enum_message(instance: &Value, options: &[Value]) -> String {
    let mut message = format!("{instance} is not one of ");
    if options.len() <= MAX_ENUM_SHOWN {
        for (i, option) in options.iter().enumerate() {
            let separator = match i {
                0 => "",
                i if i == options.len() - 1 => " or ",
                _ => ", ",
            };
            let _ = write!(message, "{separator}{option}");
        }
    } else {
        let shown = MAX_ENUM_SHOWN - 1;
        for (i, option) in options.iter().take(shown).enumerate() {
            let _ = write!(message, "{}{option}", if i == 0 { "" } else { ", " });
        }
        let _ = write!(message, " or {} other candidates", options.len() - shown);
    }
    message
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use serde_json::{Value, json};

    use super::*;

    /// Every error of `instance` against `schema`, as `path: message`, sorted.
    fn ours(schema: &Value, instance: &Value) -> Vec<String> {
        let compiled = Schema::compile(schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
        let mut errors: Vec<String> = compiled
            .errors(instance, usize::MAX)
            .into_iter()
            .map(|error| format!("{}: {}", error.instance_path, error.message))
            .collect();
        errors.sort();
        assert_eq!(compiled.is_valid(instance), errors.is_empty(), "{schema} {instance}");
        errors
    }

    /// The same from the `jsonschema` crate, the reference these messages come from.
    fn reference(schema: &Value, instance: &Value) -> Vec<String> {
        let validator = jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
        let mut errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|error| format!("{}: {error}", error.instance_path()))
            .collect();
        errors.sort();
        errors
    }

    /// Schemas of the kinds MCP servers send (Pydantic's, zod's, hand-written ones of every
    /// draft), each with instances that pass and fail it.
    fn cases() -> Vec<(Value, Vec<Value>)> {
        vec![
            (
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                vec![
                    json!({"text": "hi"}),
                    json!({"text": 42}),
                    json!({}),
                    json!([]),
                    json!({"text": null, "x": 1}),
                ],
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 1, "maximum": 10}}, "additionalProperties": false}),
                vec![
                    json!({"a": 1}),
                    json!({"a": 0}),
                    json!({"a": 11}),
                    json!({"a": 2.5}),
                    json!({"a": 3.0}),
                    json!({"b": 1, "c": 2}),
                    json!({"b": 1}),
                ],
            ),
            (
                json!({"type": ["string", "null"], "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"}),
                vec![
                    json!(null),
                    json!("ab"),
                    json!("a"),
                    json!("abcd"),
                    json!("AB"),
                    json!("é"),
                    json!(1),
                ],
            ),
            (
                json!({"enum": ["red", "green", "blue"]}),
                vec![json!("red"), json!("pink")],
            ),
            (json!({"enum": [1, 2, 3, 4, 5]}), vec![json!(1.0), json!(6)]),
            (
                json!({"const": {"a": [1, 2]}}),
                vec![json!({"a": [1, 2]}), json!({"a": [1.0, 2]}), json!({"a": [2, 1]})],
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
                vec![json!("x"), json!(1), json!(1.5)],
            ),
            (
                json!({"oneOf": [{"type": "number"}, {"type": "integer"}]}),
                vec![json!(1.5), json!(1), json!("x")],
            ),
            (json!({"not": {"type": "string"}}), vec![json!(1), json!("x")]),
            (
                json!({"allOf": [{"minimum": 2}, {"multipleOf": 2}]}),
                vec![json!(4), json!(3), json!(1), json!(0.5)],
            ),
            (json!({"multipleOf": 0.1}), vec![json!(0.3), json!(0.35), json!(7)]),
            (
                json!({"exclusiveMinimum": 0, "exclusiveMaximum": 1}),
                vec![json!(0.5), json!(0), json!(1)],
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 0, "exclusiveMinimum": true, "maximum": 5, "exclusiveMaximum": true}),
                vec![json!(0), json!(2), json!(5)],
            ),
            (
                json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3, "uniqueItems": true}),
                vec![
                    json!([1]),
                    json!([]),
                    json!([1, 2, 3, 4]),
                    json!([1, 1]),
                    json!([1, 1.0]),
                    json!([1, "x"]),
                ],
            ),
            (
                json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}),
                vec![json!(["a", 1]), json!(["a"]), json!([1, "a"]), json!(["a", 1, 2])],
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": false}),
                vec![json!(["a"]), json!(["a", 1, 2]), json!([1])],
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}),
                vec![json!(["a", 1]), json!(["a", "b"])],
            ),
            (
                json!({"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}),
                vec![json!([1, 2]), json!(["a"]), json!([1, 2, 3, 4]), json!("not an array")],
            ),
            (
                json!({"type": "object", "minProperties": 1, "maxProperties": 2, "propertyNames": {"maxLength": 3}}),
                vec![
                    json!({"a": 1}),
                    json!({}),
                    json!({"a": 1, "b": 2, "c": 3}),
                    json!({"long": 1}),
                ],
            ),
            (
                json!({"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": {"type": "integer"}}),
                vec![json!({"x-a": "s", "b": 1}), json!({"x-a": 1}), json!({"b": "s"})],
            ),
            (
                json!({"dependentRequired": {"card": ["billing"]}, "dependentSchemas": {"b": {"required": ["c"]}}}),
                vec![
                    json!({"card": 1, "billing": 2}),
                    json!({"card": 1}),
                    json!({"b": 1}),
                    json!({}),
                ],
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}),
                vec![json!({"a": 1, "b": 1}), json!({"a": 1}), json!({"c": 1})],
            ),
            (
                json!({"if": {"properties": {"kind": {"const": "n"}}}, "then": {"properties": {"v": {"type": "number"}}}, "else": {"properties": {"v": {"type": "string"}}}}),
                vec![
                    json!({"kind": "n", "v": 1}),
                    json!({"kind": "n", "v": "x"}),
                    json!({"kind": "s", "v": 1}),
                    json!({"kind": "s", "v": "x"}),
                ],
            ),
            (
                // Pydantic's shape: `$defs`, `$ref` with siblings, nullable through anyOf.
                json!({
                    "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"], "title": "Point"}},
                    "type": "object",
                    "properties": {
                        "at": {"$ref": "#/$defs/Point", "description": "where"},
                        "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                        "tags": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["at"]
                }),
                vec![
                    json!({"at": {"x": 1, "y": 2}}),
                    json!({"at": {"x": 1}}),
                    json!({"at": {"x": "1", "y": 2}, "label": 3, "tags": ["a", 1]}),
                ],
            ),
            (
                // A recursive schema through `$ref: "#"` and an anchor.
                json!({"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}, "meta": {"$ref": "#meta"}}, "$defs": {"m": {"$anchor": "meta", "type": "object"}}}),
                vec![
                    json!({"name": "a", "children": [{"name": "b", "children": []}]}),
                    json!({"children": [{"name": 1}]}),
                    json!({"meta": 1}),
                ],
            ),
            (
                // Draft 7: a `$ref` with siblings ignores them.
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}}),
                vec![json!({"a": "long"}), json!({"a": 1})],
            ),
            (
                json!({"properties": {"a/b": {"type": "string"}, "c~d": {"type": "string"}}}),
                vec![json!({"a/b": 1, "c~d": 2})],
            ),
            (json!(false), vec![json!(1)]),
            (json!(true), vec![json!(1)]),
            (
                json!({"properties": {"a": false}}),
                vec![json!({"a": 1}), json!({"b": 1})],
            ),
            (
                // Formats are annotations in 2020-12, and unevaluated* not checked here:
                // both only ever accept more.
                json!({"type": "string", "format": "email"}),
                vec![json!("not an email"), json!("a@b.c")],
            ),
        ]
    }

    #[test]
    fn agrees_with_the_jsonschema_crate_on_validity_and_messages() {
        let mut differences = Vec::new();
        for (schema, instances) in cases() {
            for instance in instances {
                let (ours, reference) = (ours(&schema, &instance), reference(&schema, &instance));
                if ours != reference {
                    differences.push(format!(
                        "schema {schema}\n  instance {instance}\n  ours {ours:?}\n  reference {reference:?}"
                    ));
                }
            }
        }
        assert!(differences.is_empty(), "{}", differences.join("\n"));
    }

    #[test]
    fn errors_are_limited_and_in_the_schemas_order() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["c", "d"]});
        let compiled = Schema::compile(&schema).unwrap();
        let errors = compiled.errors(&json!({"a": 1, "b": 2}), 3);
        let shown: Vec<String> = errors.iter().map(|e| format!("{}: {e}", e.instance_path)).collect();
        assert_eq!(
            shown,
            [
                "/a: 1 is not of type \"string\"",
                "/b: 2 is not of type \"string\"",
                ": \"c\" is a required property"
            ]
        );
    }

    #[test]
    fn schemas_that_cannot_be_applied_are_refused_at_compile_time() {
        for bad in [
            json!({"type": "strin"}),
            json!({"required": "a"}),
            json!({"properties": {"a": 1}}),
            json!({"minLength": -1}),
            json!({"anyOf": []}),
            json!({"$ref": "#/$defs/missing"}),
            json!({"$ref": "https://example.com/other.json"}),
            json!(3),
        ] {
            assert!(Schema::compile(&bad).is_err(), "{bad}");
            assert!(jsonschema::validator_for(&bad).is_err(), "the reference accepts {bad}");
        }
    }

    #[test]
    fn a_schema_that_refers_to_itself_without_end_stops_with_an_error() {
        let compiled = Schema::compile(&json!({"$ref": "#"})).unwrap();
        let errors = compiled.errors(&json!(1), 3);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("nests deeper"), "{errors:?}");
        let mutual = Schema::compile(
            &json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        )
        .unwrap();
        assert!(!mutual.is_valid(&json!(1)));
    }

    #[test]
    fn a_pattern_the_regex_crate_cannot_compile_is_not_checked() {
        // ECMA-262 look-ahead: the server checks it; toolgate does not refuse the tool.
        let compiled = Schema::compile(&json!({"type": "string", "pattern": "^(?!x)"})).unwrap();
        assert!(compiled.is_valid(&json!("xyz")));
        assert!(!compiled.is_valid(&json!(1)));
    }

    #[test]
    fn references_through_declared_ids() {
        let schema = json!({
            "$id": "https://example.com/root.json",
            "$defs": {"s": {"$id": "https://example.com/s.json", "type": "string"}},
            "properties": {"a": {"$ref": "https://example.com/s.json"}, "b": {"$ref": "https://example.com/root.json#/$defs/s"}}
        });
        assert_eq!(
            ours(&schema, &json!({"a": 1, "b": 2})),
            reference(&schema, &json!({"a": 1, "b": 2}))
        );
        assert_eq!(ours(&schema, &json!({"a": "x", "b": "y"})), Vec::<String>::new());
    }
}

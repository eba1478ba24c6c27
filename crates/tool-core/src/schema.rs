//! JSON Schema in the shape model providers accept (crates.md §2.1).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// Formats defined by JSON Schema itself; schemars also emits Rust-specific ones
/// (`uint32`, `double`) that some providers reject.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The schema of `T`: inline (no `$ref`), optional fields optional rather than nullable,
/// no non-standard `format`, no `$schema` or `title` noise.
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft07().with(|settings| {
        settings.inline_subschemas = true;
    });
    let mut value: Value = settings.into_generator().into_root_schema_for::<T>().into();
    if let Some(root) = value.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
        root.remove("definitions");
        root.remove("$defs");
    }
    clean(&mut value);
    value
}

fn clean(value: &mut Value) {
    match value {
        Value::Object(map) => {
            // An optional field is absent, not null: providers (and OpenCode's zod schemas)
            // describe it as optional only.
            let required: Vec<String> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    if !required.contains(name) {
                        strip_null(property);
                    }
                }
            }
            let nonstandard = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| !STANDARD_FORMATS.contains(&format));
            if nonstandard {
                map.remove("format");
            }
            map.values_mut().for_each(clean);
        }
        Value::Array(items) => items.iter_mut().for_each(clean),
        _ => {}
    }
}

/// Removes `null` as an accepted value of `schema` (from `type`, `enum`, `anyOf`/`oneOf`).
fn strip_null(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|kind| kind != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(options)) = map.get_mut(key) else {
            continue;
        };
        options.retain(|option| option.get("type").and_then(Value::as_str) != Some("null"));
        if options.len() == 1 {
            let Some(Value::Object(only)) = options.pop() else {
                continue;
            };
            map.remove(key);
            for (field, value) in only {
                map.entry(field).or_insert(value);
            }
        }
    }
}

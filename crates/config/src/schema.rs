//! The JSON Schema of a config file, generated from [`Document`](crate::Document).

use serde_json::Value;

use crate::document::Document;

/// The `$schema` value for toolgate's schema, as published with the sources
/// (`schema/toolgate.schema.json`, kept equal to [`schema`] by a test). OpenCode's
/// `https://opencode.ai/config.json` is accepted too.
pub const SCHEMA_URL: &str = "https://raw.githubusercontent.com/toolgate/toolgate/main/schema/toolgate.schema.json";

/// The JSON Schema (draft 7, which editors read) of a config file. It lists every key
/// toolgate reads and every OpenCode key it ignores, and leaves other keys open, so it
/// never rejects an OpenCode config.
pub fn schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<Document>().to_value();
    if let Value::Object(map) = &mut schema {
        map.insert("$id".into(), Value::String(SCHEMA_URL.into()));
    }
    schema
}

//! Typed decoding with key paths: serde's derive does the work, `serde_path_to_error`
//! records where it failed, and the message is put in the one-line form
//! `PATH: expected …, found …` every configuration error has.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ConfigError, key_path, shown};

/// Decodes `value` as a `T`; an error names `base` joined with the failing key path.
pub(crate) fn decode<T: DeserializeOwned>(value: Value, base: &str) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let mut path = base.to_string();
        for segment in error.path().iter() {
            match segment {
                serde_path_to_error::Segment::Map { key } => path = key_path(&path, key),
                serde_path_to_error::Segment::Seq { index } => path = format!("{path}[{index}]"),
                serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => {}
                // A future kind of segment: the path so far is still right.
                #[allow(unreachable_patterns)]
                _ => {}
            }
        }
        ConfigError::invalid("", path, message(&error.into_inner().to_string()))
    })
}

/// serde's `invalid type: string "x", expected a boolean` as `expected a boolean, found "x"`.
fn message(text: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = text.strip_prefix(prefix)
            && let Some((found, expected)) = rest.split_once(", expected ")
        {
            let expected = match expected {
                "a sequence" => "a list",
                "a map" => "an object",
                other => other,
            };
            return format!("expected {expected}, found {}", found_text(found));
        }
    }
    text.to_string()
}

fn found_text(unexpected: &str) -> String {
    let ticked = |s: &str| s.trim_matches('`').to_string();
    if let Some(rest) = unexpected.strip_prefix("string ") {
        rest.to_string()
    } else if let Some(rest) = unexpected
        .strip_prefix("integer ")
        .or_else(|| unexpected.strip_prefix("floating point "))
        .or_else(|| unexpected.strip_prefix("boolean "))
    {
        ticked(rest)
    } else {
        match unexpected {
            "map" => "an object".into(),
            "sequence" => "a list".into(),
            "unit value" | "null" => "null".into(),
            other => other.to_string(),
        }
    }
}

/// `expected {expected}, found {value}`, as every leaf type reports a wrong value.
pub(crate) fn expected(expected: &str, found: &Value) -> String {
    format!("expected {expected}, found {}", shown(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_read_as_expected_found() {
        assert_eq!(
            message("invalid type: string \"x\", expected a boolean"),
            "expected a boolean, found \"x\""
        );
        assert_eq!(
            message("invalid type: integer `-1`, expected a string"),
            "expected a string, found -1"
        );
        assert_eq!(
            message("invalid type: map, expected a string"),
            "expected a string, found an object"
        );
        assert_eq!(message("missing field `action`"), "missing field `action`");
    }
}

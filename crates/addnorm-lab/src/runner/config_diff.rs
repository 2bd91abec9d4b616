//! The first difference between two saved configurations, named by its field, so that a
//! worker, `report` or `merge` can refuse a directory of another study and say why.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{LabError, read_json, write_json};

/// A field whose values differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The top-level field's name.
    pub field: String,
    /// Its value in the first configuration, as JSON.
    pub first: String,
    /// Its value in the second configuration, as JSON.
    pub second: String,
}

impl core::fmt::Display for Difference {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {} vs {}", self.field, self.first, self.second)
    }
}

/// Saves `config` as `out/config.json`, or, if a study is already there, checks `config`
/// against it; returns the first difference, which makes the caller exit with code 2.
///
/// # Errors
/// If `config.json` cannot be read or written.
pub fn adopt_config<T: Serialize + DeserializeOwned>(
    config: &T,
    out: &Path,
) -> Result<Option<Difference>, LabError> {
    let path = out.join("config.json");
    if path.exists() {
        let existing: T = read_json(&path)?;
        return Ok(first_difference(&existing, config));
    }
    write_json(&path, config)?;
    Ok(None)
}

/// The first top-level field (in serialization order) whose values differ, if any.
pub fn first_difference<T: Serialize>(first: &T, second: &T) -> Option<Difference> {
    let a = serde_json::to_value(first).expect("serializable");
    let b = serde_json::to_value(second).expect("serializable");
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return (a != b).then(|| Difference {
            field: "(value)".into(),
            first: a.to_string(),
            second: b.to_string(),
        });
    };
    let missing = serde_json::Value::Null;
    a.keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .find_map(|key| {
            let (x, y) = (
                a.get(key).unwrap_or(&missing),
                b.get(key).unwrap_or(&missing),
            );
            (x != y).then(|| Difference {
                field: key.clone(),
                first: x.to_string(),
                second: y.to_string(),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Grid {
        steps: usize,
        lrs: Vec<f64>,
    }

    #[test]
    fn names_the_first_differing_field_and_both_values() {
        let a = Grid {
            steps: 10,
            lrs: vec![1e-3],
        };
        let b = Grid {
            steps: 10,
            lrs: vec![1e-3, 1e-2],
        };
        let d = first_difference(&a, &b).expect("they differ");
        assert_eq!(d.to_string(), "lrs: [0.001] vs [0.001,0.01]");
        assert_eq!(first_difference(&a, &a), None);
    }
}

//! The claims registry (`crates/addnorm-lab/claims.toml`): every claim the study checks,
//! with its rule, registered before the runs that decide it.
//!
//! The file is compiled in ([`Registry::embedded`]), so a binary's verdicts always come
//! from the registry it was built with, and [`Registry::content_hash`] names that version in
//! the report. Loading checks every entry: unique ids, a known kind, a quote, a statistic,
//! and a well-formed [`Rule`].
//!
//! ```text
//! claims.toml ──parse──▶ Registry { claim: [RegisteredClaim] } ──rule──▶ verdict.rs
//! content hash = FNV-1a 64 of the file's bytes, as 16 hex digits
//! ```
//!
//! # Shapes
//! Not applicable: a parsed data file.
//!
//! # Example
//! ```
//! use addnorm_lab::study::registry::{ClaimKind, Registry};
//! let registry = Registry::embedded();
//! let claim = registry.get("wortsman-fig1-qkln-lowers-sensitivity").unwrap();
//! assert_eq!(claim.kind, ClaimKind::Published);
//! assert!(claim.statistic.contains("OWN ℓ*"));
//! ```

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::verdict::Rule;

/// The registry's text, as built into this binary.
pub const CLAIMS_TOML: &str = include_str!("../../claims.toml");

/// Where a claim comes from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// A paper states it; we check it in a toy copy of its setting.
    Published,
    /// A paper's claim moved outside its stated setting (another depth, norm or optimizer).
    Extension,
    /// A check of the set-up itself, no paper's claim.
    Control,
}

/// One registered claim.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RegisteredClaim {
    /// Stable name, e.g. `wortsman-fig1-sensitivity-grows-with-size-baseline`.
    pub id: String,
    /// Published, extension or control.
    pub kind: ClaimKind,
    /// Paper, and figure, section or theorem.
    pub source: String,
    /// The paper's sentence the claim tests.
    pub quote: String,
    /// What is measured, and over which seeds.
    pub statistic: String,
    /// The rule the statistic's 95% interval is read against.
    pub rule: Rule,
    /// The paper's setting, and ours.
    pub setting: String,
}

impl RegisteredClaim {
    /// The paper: the source up to its first comma ("Xiong et al. 2020").
    pub fn paper(&self) -> &str {
        self.source.split(',').next().unwrap_or_default().trim()
    }
}

/// Every registered claim, in file order.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    /// The claims (`[[claim]]` tables).
    pub claim: Vec<RegisteredClaim>,
}

impl Registry {
    /// Parses and checks a registry.
    ///
    /// # Errors
    /// A TOML error, or the first entry that fails a check, named by its id.
    pub fn parse(text: &str) -> Result<Self, String> {
        let registry: Self = toml::from_str(text).map_err(|e| format!("claims.toml: {e}"))?;
        registry.check()?;
        Ok(registry)
    }

    /// The registry built into this binary.
    ///
    /// # Panics
    /// If the built-in file is malformed (a test keeps it well-formed).
    pub fn embedded() -> Self {
        Self::parse(CLAIMS_TOML).unwrap_or_else(|e| panic!("{e}"))
    }

    /// FNV-1a (64-bit) of the built-in file's bytes, as 16 hex digits.
    pub fn content_hash() -> String {
        let hash = CLAIMS_TOML.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{hash:016x}")
    }

    /// The claim named `id`.
    pub fn get(&self, id: &str) -> Option<&RegisteredClaim> {
        self.claim.iter().find(|c| c.id == id)
    }

    /// The claims of `kind`.
    pub fn of_kind(&self, kind: ClaimKind) -> impl Iterator<Item = &RegisteredClaim> {
        self.claim.iter().filter(move |c| c.kind == kind)
    }

    /// Unique, well-formed ids; a quote and a statistic; a well-formed rule.
    fn check(&self) -> Result<(), String> {
        let mut seen = BTreeSet::new();
        for c in &self.claim {
            let named = |what: &str| format!("claims.toml: claim {:?}: {what}", c.id);
            let well_formed = !c.id.is_empty()
                && c.id
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-');
            if !well_formed {
                return Err(named("an id is lowercase letters, digits and '-'"));
            }
            if !seen.insert(c.id.as_str()) {
                return Err(named("the id is registered twice"));
            }
            for (field, text) in [
                ("source", &c.source),
                ("quote", &c.quote),
                ("statistic", &c.statistic),
                ("setting", &c.setting),
            ] {
                if text.trim().is_empty() {
                    return Err(named(&format!("{field} is empty")));
                }
            }
            c.rule.check().map_err(|e| named(&e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_registry_parses_and_meets_the_studys_targets() {
        let registry = Registry::embedded();
        let published: Vec<_> = registry.of_kind(ClaimKind::Published).collect();
        let papers: BTreeSet<&str> = published.iter().map(|c| c.paper()).collect();
        assert!(
            published.len() >= 20,
            "{} published claims",
            published.len()
        );
        assert!(papers.len() >= 5, "published claims from {papers:?}");
        assert!(registry.of_kind(ClaimKind::Control).count() >= 1);
        assert_eq!(Registry::content_hash().len(), 16);
    }

    #[test]
    fn lr_sensitivity_claims_register_the_papers_own_best_lr() {
        let registry = Registry::embedded();
        for c in registry.claim.iter().filter(|c| c.statistic.contains("S_")) {
            assert!(
                c.statistic.contains("own ℓ*") || c.statistic.contains("OWN ℓ*"),
                "{}",
                c.id
            );
        }
        // Claim 4 as the paper states it: every layer, not the upper half.
        let flat = registry.get("xiong-fig3-preln-flat").unwrap();
        assert!(flat.statistic.contains("EVERY layer"), "{}", flat.statistic);
    }

    #[test]
    fn bad_entries_are_refused_and_named() {
        let entry = |id: &str, rule: &str| {
            format!(
                "[[claim]]\nid = \"{id}\"\nkind = \"published\"\nsource = \"P, Fig. 1\"\n\
                 quote = \"q\"\nstatistic = \"s\"\nrule = {rule}\nsetting = \"t\"\n"
            )
        };
        let ok = entry("a-claim", "{ op = \">\", bound = 0 }");
        assert_eq!(Registry::parse(&ok).unwrap().claim[0].paper(), "P");
        let twice = format!("{ok}{ok}");
        assert!(
            Registry::parse(&twice)
                .unwrap_err()
                .contains("registered twice")
        );
        let empty = entry("b", "{ op = \"within\", bound = [1, 0] }");
        assert!(
            Registry::parse(&empty)
                .unwrap_err()
                .contains("\"b\": rule within")
        );
        let upper = entry("Bad_Id", "{ op = \"<\", bound = 1 }");
        assert!(Registry::parse(&upper).unwrap_err().contains("lowercase"));
        let unknown = ok.replace("published", "folklore");
        assert!(
            Registry::parse(&unknown)
                .unwrap_err()
                .contains("claims.toml")
        );
    }
}

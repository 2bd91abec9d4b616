//! The one decision rule: a claim's registered [`Rule`] read against the whole 95% interval
//! of its statistic, giving one of three [`Verdict`]s.
//!
//! ```text
//! rule          reproduced            not reproduced          inconclusive
//! > b           low > b               high ≤ b                otherwise
//! < b           high < b              low ≥ b                 otherwise
//! within [a, c] a ≤ low, high ≤ c     high < a or low > c     otherwise
//! ```
//!
//! No verdict reads the point estimate: an interval that straddles the bound is
//! `inconclusive`, however the point falls. An interval with a NaN end is `inconclusive`.
//!
//! # Shapes
//! Not applicable: a rule and an interval.
//!
//! # Example
//! ```
//! use addnorm_lab::stats::sample::Estimate;
//! use addnorm_lab::study::verdict::{Rule, Verdict};
//! let slope = Estimate { value: -0.39, low: -0.51, high: -0.29 };
//! // Within [−0.75, −0.3]? The interval leaves the window at −0.29: inconclusive.
//! assert_eq!(Rule::within(-0.75, -0.3).verdict(&slope), Verdict::Inconclusive);
//! assert_eq!(Rule::less(0.0).verdict(&slope), Verdict::Reproduced);
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::stats::sample::Estimate;

/// How a statistic is compared with its bound.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// The statistic exceeds the bound.
    #[serde(rename = ">")]
    Greater,
    /// The statistic is below the bound.
    #[serde(rename = "<")]
    Less,
    /// The statistic lies in the closed range `[lo, hi]`.
    #[serde(rename = "within")]
    Within,
}

/// A rule's bound: one number for `>` and `<`, a range `[lo, hi]` for `within`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(untagged)]
pub enum Bound {
    /// One number.
    Value(f64),
    /// A closed range.
    Range([f64; 2]),
}

/// A claim's registered rule: `statistic op bound`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    /// The comparison.
    pub op: Op,
    /// What the statistic is compared with.
    pub bound: Bound,
}

/// What the interval says of the rule.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval satisfies the rule.
    Reproduced,
    /// No part of the interval satisfies it.
    NotReproduced,
    /// The interval straddles the bound, or has a NaN end.
    Inconclusive,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Reproduced => "reproduced",
            Verdict::NotReproduced => "not reproduced",
            Verdict::Inconclusive => "inconclusive",
        })
    }
}

impl fmt::Display for Rule {
    /// `> 0`, `< 2`, `within [-0.25, 0.25]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.op, self.bound) {
            (Op::Greater, Bound::Value(b)) => write!(f, "> {b}"),
            (Op::Less, Bound::Value(b)) => write!(f, "< {b}"),
            (Op::Within, Bound::Range([lo, hi])) => write!(f, "within [{lo}, {hi}]"),
            (op, bound) => write!(f, "{op:?} {bound:?}"),
        }
    }
}

impl Rule {
    /// `statistic > bound`.
    pub fn greater(bound: f64) -> Self {
        Self {
            op: Op::Greater,
            bound: Bound::Value(bound),
        }
    }

    /// `statistic < bound`.
    pub fn less(bound: f64) -> Self {
        Self {
            op: Op::Less,
            bound: Bound::Value(bound),
        }
    }

    /// `lo ≤ statistic ≤ hi`.
    pub fn within(lo: f64, hi: f64) -> Self {
        Self {
            op: Op::Within,
            bound: Bound::Range([lo, hi]),
        }
    }

    /// Why this rule is malformed, if it is: `within` needs a range `lo ≤ hi`, `>` and `<`
    /// one number, and every bound must be finite.
    pub fn check(&self) -> Result<(), String> {
        match (self.op, self.bound) {
            (Op::Within, Bound::Range([lo, hi])) if lo.is_finite() && hi.is_finite() => (lo <= hi)
                .then_some(())
                .ok_or(format!("rule within [{lo}, {hi}]: the range is empty")),
            (Op::Greater | Op::Less, Bound::Value(b)) if b.is_finite() => Ok(()),
            (op, bound) => Err(format!(
                "rule {op:?} with bound {bound:?}: `within` takes a finite [lo, hi], `>` and \
                 `<` one finite number"
            )),
        }
    }

    /// The verdict on `estimate`'s interval `[low, high]`.
    ///
    /// # Panics
    /// If the rule is malformed (see [`Rule::check`]); the registry checks every rule as it
    /// loads.
    pub fn verdict(&self, estimate: &Estimate) -> Verdict {
        if let Err(e) = self.check() {
            panic!("{e}");
        }
        let (low, high) = (estimate.low, estimate.high);
        if low.is_nan() || high.is_nan() {
            return Verdict::Inconclusive;
        }
        let (all, none) = match (self.op, self.bound) {
            (Op::Greater, Bound::Value(b)) => (low > b, high <= b),
            (Op::Less, Bound::Value(b)) => (high < b, low >= b),
            (Op::Within, Bound::Range([lo, hi])) => {
                (lo <= low && high <= hi, high < lo || low > hi)
            }
            _ => unreachable!("checked above"),
        };
        match (all, none) {
            (true, _) => Verdict::Reproduced,
            (_, true) => Verdict::NotReproduced,
            _ => Verdict::Inconclusive,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(low: f64, high: f64) -> Estimate {
        Estimate {
            value: 0.5 * (low + high),
            low,
            high,
        }
    }

    #[test]
    fn greater_gives_each_verdict_and_is_strict_at_the_bound() {
        let rule = Rule::greater(0.0);
        assert_eq!(rule.verdict(&interval(0.1, 0.4)), Verdict::Reproduced);
        assert_eq!(rule.verdict(&interval(-0.4, -0.1)), Verdict::NotReproduced);
        assert_eq!(rule.verdict(&interval(-0.1, 0.4)), Verdict::Inconclusive);
        // An interval that starts on the bound does not exceed it; one that ends there never
        // does.
        assert_eq!(rule.verdict(&interval(0.0, 0.4)), Verdict::Inconclusive);
        assert_eq!(rule.verdict(&interval(-0.4, 0.0)), Verdict::NotReproduced);
    }

    #[test]
    fn less_mirrors_greater() {
        let rule = Rule::less(1.0);
        assert_eq!(rule.verdict(&interval(0.2, 0.9)), Verdict::Reproduced);
        assert_eq!(rule.verdict(&interval(1.0, 1.5)), Verdict::NotReproduced);
        assert_eq!(rule.verdict(&interval(0.2, 1.0)), Verdict::Inconclusive);
    }

    #[test]
    fn within_is_closed_and_needs_the_whole_interval_inside() {
        let rule = Rule::within(-0.25, 0.25);
        assert_eq!(rule.verdict(&interval(-0.25, 0.25)), Verdict::Reproduced);
        assert_eq!(rule.verdict(&interval(-0.02, 0.19)), Verdict::Reproduced);
        assert_eq!(rule.verdict(&interval(0.26, 0.5)), Verdict::NotReproduced);
        assert_eq!(rule.verdict(&interval(-0.9, -0.3)), Verdict::NotReproduced);
        assert_eq!(rule.verdict(&interval(0.2, 0.3)), Verdict::Inconclusive);
        // Wider than the window on both sides: some of it is inside, not all.
        assert_eq!(rule.verdict(&interval(-1.0, 1.0)), Verdict::Inconclusive);
    }

    #[test]
    fn a_point_estimate_never_decides() {
        // The point is well inside; the interval is not.
        let e = Estimate {
            value: 0.0,
            low: -0.3,
            high: 0.2,
        };
        assert_eq!(Rule::within(-0.25, 0.25).verdict(&e), Verdict::Inconclusive);
        assert_eq!(
            Rule::greater(0.0).verdict(&interval(f64::NAN, 1.0)),
            Verdict::Inconclusive
        );
        // One seed: the bootstrap gives no interval, so a point far inside decides nothing.
        let one = crate::stats::sample::bootstrap(&[0.4], 1, |s| s[0]);
        assert_eq!(Rule::less(1.0).verdict(&one), Verdict::Inconclusive);
    }

    #[test]
    fn malformed_rules_are_named() {
        assert!(
            Rule::within(1.0, 0.0)
                .check()
                .unwrap_err()
                .contains("empty")
        );
        let mixed = Rule {
            op: Op::Greater,
            bound: Bound::Range([0.0, 1.0]),
        };
        assert!(mixed.check().unwrap_err().contains("one finite number"));
        assert!(Rule::less(f64::NAN).check().is_err());
    }

    #[test]
    #[should_panic(expected = "the range is empty")]
    fn a_malformed_rule_cannot_give_a_verdict() {
        Rule::within(1.0, 0.0).verdict(&interval(0.0, 1.0));
    }

    #[test]
    fn verdicts_read_and_print_as_words() {
        let v: Verdict = serde_json::from_str("\"not_reproduced\"").unwrap();
        assert_eq!(v, Verdict::NotReproduced);
        assert_eq!(Verdict::Inconclusive.to_string(), "inconclusive");
        let r: Rule = serde_json::from_str(r#"{"op": "within", "bound": [-0.75, -0.5]}"#).unwrap();
        assert_eq!(r, Rule::within(-0.75, -0.5));
        let r: Rule = serde_json::from_str(r#"{"op": ">", "bound": 0}"#).unwrap();
        assert_eq!(r, Rule::greater(0.0));
        assert_eq!(
            Rule::within(-0.25, 0.25).to_string(),
            "within [-0.25, 0.25]"
        );
        assert_eq!(Rule::less(2.0).to_string(), "< 2");
    }
}

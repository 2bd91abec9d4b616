//! Static shards of a grid, for machines without a shared directory: shard `K/N` takes the
//! runs whose index in the grid's fixed order satisfies `index % N == K`. The shards'
//! directories are joined afterwards with `addnorm merge` ([`crate::runner::merge`]).

use std::str::FromStr;

/// One shard of `count`, or the whole grid (`0/1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// K, in `0..count`.
    pub index: usize,
    /// N, at least 1.
    pub count: usize,
}

impl Default for Shard {
    fn default() -> Self {
        Self { index: 0, count: 1 }
    }
}

impl Shard {
    /// Whether the run at `position` of the grid belongs to this shard.
    pub fn takes(&self, position: usize) -> bool {
        position % self.count == self.index
    }

    /// Whether this is the whole grid.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }
}

impl core::fmt::Display for Shard {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let wrong = || format!("--shard {s:?}: expected K/N with N ≥ 1 and 0 ≤ K < N, e.g. 0/4");
        let (k, n) = s.split_once('/').ok_or_else(wrong)?;
        let (index, count) = (
            k.trim().parse::<usize>().map_err(|_| wrong())?,
            n.trim().parse::<usize>().map_err(|_| wrong())?,
        );
        if count == 0 || index >= count {
            return Err(wrong());
        }
        Ok(Self { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_grid_and_bad_specs_are_named() {
        let shards: Vec<Shard> = ["0/3", "1/3", "2/3"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for position in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.takes(position)).count(), 1);
        }
        assert_eq!(shards[1].to_string(), "1/3");
        for bad in ["3/3", "1/0", "a/2", "2"] {
            let message = bad.parse::<Shard>().unwrap_err();
            assert!(
                message.contains("--shard") && message.contains(bad),
                "{message}"
            );
        }
    }
}

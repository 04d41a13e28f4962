//! Splitting a campaign across machines: `--shard K/N` runs the K-th of N contiguous, disjoint
//! slices of the seed range, so N machines together run every seed exactly once and their
//! summaries merge (see [`crate::campaign::merge`]).

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// The most shards a campaign splits into.
pub const MAX_SHARDS: u32 = 1_000;

/// Shard `index` (1-based) of `of`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Shard {
    index: u32,
    of: u32,
}

impl Shard {
    /// This shard's slice of `all`: contiguous, disjoint from the other shards' and together
    /// covering `all`; slice sizes differ by at most one seed. Empty when `all` has fewer seeds
    /// than there are shards and this shard gets none.
    pub fn seeds(self, all: Range<u64>) -> Range<u64> {
        let len = all.end - all.start;
        let bound = |k: u32| all.start + len * u64::from(k) / u64::from(self.of);
        bound(self.index - 1)..bound(self.index)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected K/N with 1 <= K <= N <= {MAX_SHARDS}, got {s:?}");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let of: u32 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > of || of > MAX_SHARDS {
            return Err(bad());
        }
        Ok(Shard { index, of })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_range_once_in_slices_of_nearly_equal_size() {
        for (range, n) in [(0..10, 3), (5..6, 1), (0..2, 4), (100..1_100, 7)] {
            let slices: Vec<_> = (1..=n)
                .map(|k| Shard { index: k, of: n }.seeds(range.clone()))
                .collect();
            assert_eq!(slices[0].start, range.start);
            assert_eq!(slices[slices.len() - 1].end, range.end);
            for pair in slices.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{slices:?}");
            }
            let sizes: Vec<u64> = slices.iter().map(|s| s.end - s.start).collect();
            let (min, max) = (sizes.iter().min(), sizes.iter().max());
            assert!(max.zip(min).is_some_and(|(a, b)| a - b <= 1), "{sizes:?}");
        }
    }

    #[test]
    fn only_k_of_n_with_k_from_1_to_n_parses() {
        assert_eq!("2/3".parse(), Ok(Shard { index: 2, of: 3 }));
        assert_eq!(
            "2/3".parse::<Shard>().map(|s| s.to_string()),
            Ok("2/3".into())
        );
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "1/1001", ""] {
            let err = bad.parse::<Shard>().expect_err(bad);
            assert!(err.contains("expected K/N"), "{bad}: {err}");
        }
    }
}

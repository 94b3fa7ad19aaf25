//! What every merge of shards checks alike: which shard holds each unit of the job, by
//! canonical index, every unit exactly once ([`owners`]). A harness's merge then reads
//! each unit's output from its owner in canonical order, so the merged artefacts are the
//! one-machine job's.

/// Why a set of shards does not hold a job's units exactly once. `shard` is the index
/// into the shards given; `entry` the position in that shard's list of units (its
/// harness names the unit as its record writes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Coverage {
    #[error("entry {entry} of shard {shard} is not a unit of the job")]
    OutOfRange { shard: usize, entry: usize },
    #[error("entry {entry} of shard {shard} is a unit an earlier shard holds")]
    Twice { shard: usize, entry: usize },
    #[error("no shard holds unit {unit}")]
    Missing { unit: usize },
}

/// The shard (index into `shards`) that holds each unit `0..total`: `shards` gives
/// each shard's list of units as canonical indexes (`None`: an entry its harness could
/// not read as one). Every unit must be held exactly once.
pub fn owners<S, U>(total: usize, shards: S) -> Result<Vec<usize>, Coverage>
where
    S: IntoIterator<Item = U>,
    U: IntoIterator<Item = Option<usize>>,
{
    let mut owner: Vec<Option<usize>> = vec![None; total];
    for (shard, units) in shards.into_iter().enumerate() {
        for (entry, unit) in units.into_iter().enumerate() {
            let slot = unit
                .and_then(|u| owner.get_mut(u))
                .ok_or(Coverage::OutOfRange { shard, entry })?;
            if slot.replace(shard).is_some() {
                return Err(Coverage::Twice { shard, entry });
            }
        }
    }
    owner
        .iter()
        .enumerate()
        .map(|(unit, o)| o.ok_or(Coverage::Missing { unit }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_once_or_the_first_fault_named() {
        assert_eq!(
            owners(4, [vec![Some(0), Some(2)], vec![Some(3), Some(1)]]),
            Ok(vec![0, 1, 0, 1])
        );
        assert_eq!(
            owners(4, [vec![Some(0), Some(2)], vec![Some(3), Some(4)]]),
            Err(Coverage::OutOfRange { shard: 1, entry: 1 })
        );
        assert_eq!(
            owners(4, [vec![Some(0), None], vec![]]),
            Err(Coverage::OutOfRange { shard: 0, entry: 1 })
        );
        assert_eq!(
            owners(4, [vec![Some(0), Some(2)], vec![Some(3), Some(2)]]),
            Err(Coverage::Twice { shard: 1, entry: 1 })
        );
        assert_eq!(
            owners(4, [vec![Some(0), Some(2)], vec![Some(3)]]),
            Err(Coverage::Missing { unit: 1 })
        );
        assert_eq!(owners(0, Vec::<Vec<Option<usize>>>::new()), Ok(vec![]));
    }
}

//! Passthrough's allowances on the striped line: how many admissions on arrival each stripe
//! may still make. The tick moves them, in its last call on each stripe (`apply.lua`); a join
//! in passthrough takes one (`join.lua`). Here: how the tick shares the room among them.

use std::time::Duration;

/// How long a stripe's allowance of admissions on arrival lasts unless a tick renews it: a
/// line whose promoter stops admits nobody on arrival soon after.
pub const ALLOW_FOR: Duration = Duration::from_secs(10);

/// Each stripe's change of allowance (admissions on arrival), so that all the allowances
/// together come to `budget` (the room the sessions leave): a dark stripe keeps what it
/// holds, and each stripe that answered moves toward an equal share of the rest, the
/// remainder's one more going to the stripes from `turn` on, so that over ticks each has its
/// turn. A stripe over its share gives the excess back; only the room no allowance holds is
/// granted, so the taken-back room is granted at the next tick (a join may use an allowance
/// while the tick takes it back). Where the allowances pass `budget` (the capacity fell),
/// the shares shrink and the excess is taken back.
pub(super) fn allotments(allowed: &[u64], dark: &[bool], budget: u64, turn: usize) -> Vec<i64> {
    let lit: Vec<usize> = (0..allowed.len()).filter(|k| !dark[*k]).collect();
    let mut changes = vec![0i64; allowed.len()];
    let n = lit.len();
    if n == 0 {
        return changes;
    }
    let held: u64 = allowed.iter().sum();
    let unlit = held - lit.iter().map(|k| allowed[*k]).sum::<u64>();
    let pool = budget.saturating_sub(unlit);
    let (share, extra) = (pool / n as u64, (pool % n as u64) as usize);
    let mut left = budget.saturating_sub(held);
    for i in 0..n {
        let k = lit[(turn + i) % n];
        let target = share + u64::from(i < extra);
        if target < allowed[k] {
            changes[k] = -((allowed[k] - target) as i64);
        } else {
            let grant = (target - allowed[k]).min(left);
            left -= grant;
            changes[k] = grant as i64;
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::allotments;

    #[test]
    fn the_room_left_goes_toward_an_equal_share_of_each_stripe() {
        // A room of 10 over 4 stripes holding nothing: 3, 3, 2, 2 from the turn on.
        assert_eq!(allotments(&[0; 4], &[false; 4], 10, 0), [3, 3, 2, 2]);
        assert_eq!(allotments(&[0; 4], &[false; 4], 10, 2), [2, 2, 3, 3]);
        // A stripe over its share gives back; only the room no allowance holds is granted
        // meanwhile.
        assert_eq!(allotments(&[8, 0, 0, 0], &[false; 4], 8, 0), [-6, 0, 0, 0]);
        assert_eq!(allotments(&[8, 0, 0, 0], &[false; 4], 10, 0), [-5, 2, 0, 0]);
        // Fewer places than stripes: each gets its turn.
        assert_eq!(allotments(&[0; 4], &[false; 4], 1, 3), [0, 0, 0, 1]);
        // A dark stripe keeps what it holds, and shares nothing.
        assert_eq!(
            allotments(&[5, 1, 1, 0], &[true, false, false, false], 10, 0),
            [0, 1, 1, 1]
        );
        // The capacity fell below the allowances: the excess is taken back.
        assert_eq!(
            allotments(&[3, 3, 3, 3], &[false; 4], 0, 0),
            [-3, -3, -3, -3]
        );
        assert_eq!(
            allotments(&[3, 3, 3, 3], &[false; 4], 4, 0),
            [-2, -2, -2, -2]
        );
        // Never more granted than the room no allowance holds, whatever the shares.
        for turn in 0..5 {
            let changes = allotments(&[9, 0, 4, 1, 0], &[false; 5], 16, turn);
            let granted: i64 = changes.iter().filter(|c| **c > 0).sum();
            assert!(granted <= 2, "{changes:?}");
        }
    }
}

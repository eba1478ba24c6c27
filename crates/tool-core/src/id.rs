//! Ascending identifiers (`tool_…`, `per_…`) in OpenCode's style.
//!
//! An id is `<prefix>_` + 12 hex digits of `(milliseconds × 4096 + counter)` + 14 random
//! base62 characters. Ids made by one process sort in creation order; the random tail
//! keeps ids from different processes apart.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static LAST: Mutex<(u64, u64)> = Mutex::new((0, 0));

/// A new ascending id with the given prefix, e.g. `ascending_id("per")`: the prefix, `_`,
/// 12 hex digits of `(milliseconds × 4096 + counter)` and 14 random base62 characters.
/// Ids made by one process sort in creation order; the random tail keeps ids from
/// different processes apart.
///
/// ```
/// let first = toolgate_core::ascending_id("tool");
/// let second = toolgate_core::ascending_id("tool");
/// assert!(first.starts_with("tool_") && first < second);
/// ```
pub fn ascending_id(prefix: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as u64)
        .unwrap_or(0);
    let stamp = {
        // A poisoned lock only means another thread panicked mid-update; the pair is
        // still a valid (time, counter) so keep going.
        let mut last = LAST.lock().unwrap_or_else(|poison| poison.into_inner());
        let (last_ms, counter) = *last;
        // Never go backwards, even if the clock does.
        let (ms, counter) = if now > last_ms {
            (now, 0)
        } else {
            (last_ms, counter + 1)
        };
        // Past 4096 ids in one millisecond, borrow from the next millisecond.
        let (ms, counter) = if counter >= 0x1000 { (ms + 1, 0) } else { (ms, counter) };
        *last = (ms, counter);
        ms.wrapping_mul(0x1000).wrapping_add(counter)
    };
    let mut id = String::with_capacity(prefix.len() + 27);
    id.push_str(prefix);
    id.push('_');
    id.push_str(&format!("{:012x}", stamp & 0xffff_ffff_ffff));
    let mut random = random_u64();
    for index in 0..14 {
        if index == 10 {
            random = random_u64();
        }
        id.push(BASE62[(random % 62) as usize] as char);
        random /= 62;
    }
    id
}

/// Randomness without a dependency: every `RandomState` is freshly keyed.
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    hasher.finish()
}

//! Where an MPI envelope goes in UCP's 64-bit tag.
//!
//! ```text
//!  63            40 39            20 19             0
//! +----------------+----------------+----------------+
//! |  MPI tag (24)  | source (20)    | context (20)   |
//! +----------------+----------------+----------------+
//! ```
//!
//! - **MPI tag**, 24 bits in two's complement: applications' tags 0 to
//!   [`MAX_TAG`] (8,388,607) and the MPI layer's internal tags down to
//!   `-MAX_TAG - 1`; bit 63 is the tag's sign.
//! - **Source**, 20 bits: the sender's job rank (jobs of up to
//!   [`MAX_RANKS`] ranks).
//! - **Context id**, 20 bits: the communicator (up to [`MAX_CONTEXT`]).
//!
//! The widths are those Open MPI's pml ucx uses, which fit its tag space
//! to UCP's one word the same way; the order of the fields is our own
//! choice. A receive matches with a mask: `ANY_SOURCE` clears the source
//! field from it; `ANY_TAG` clears the tag field except its sign bit, and
//! the receive's tag value has that bit clear, so `ANY_TAG` matches only
//! tags ≥ 0 (MPI's rule: internal, negative tags are never matched by a
//! wildcard).

use oxmpi_framework_pml::module::{Limits, ANY_SOURCE, ANY_TAG};

/// Bits of the MPI tag.
pub const TAG_BITS: u32 = 24;
/// Bits of the sender's job rank.
pub const SOURCE_BITS: u32 = 20;
/// Bits of the context id.
pub const CONTEXT_BITS: u32 = 20;

const SOURCE_SHIFT: u32 = CONTEXT_BITS;
const TAG_SHIFT: u32 = CONTEXT_BITS + SOURCE_BITS;

const CONTEXT_MASK: u64 = (1 << CONTEXT_BITS) - 1;
const SOURCE_MASK: u64 = ((1 << SOURCE_BITS) - 1) << SOURCE_SHIFT;
const TAG_MASK: u64 = !0 << TAG_SHIFT;
/// The tag field's sign bit (bit 63).
const TAG_SIGN: u64 = 1 << 63;

/// The largest MPI tag (`MPI_TAG_UB`): 2^23 − 1.
pub const MAX_TAG: i32 = (1 << (TAG_BITS - 1)) - 1;
/// The smallest (internal) tag: −2^23.
pub const MIN_TAG: i32 = -MAX_TAG - 1;
/// The largest context id: 2^20 − 1.
pub const MAX_CONTEXT: u32 = (1 << CONTEXT_BITS) - 1;
/// The most ranks a job may have: 2^20 (ranks 0 to 2^20 − 1).
pub const MAX_RANKS: u32 = 1 << SOURCE_BITS;

/// What the layout can carry, answered by `Requests::limits`.
pub const LIMITS: Limits = Limits {
    max_tag: MAX_TAG,
    max_context: MAX_CONTEXT,
};

/// The UCP tag of a message from job rank `source` with MPI tag `tag` on
/// context `context`. The MPI layer keeps the three within the layout
/// ([`LIMITS`], and a job of at most [`MAX_RANKS`] ranks); anything wider
/// is cut to its field.
#[inline]
pub fn send_tag(tag: i32, source: u32, context: u32) -> u64 {
    ((tag as u64) << TAG_SHIFT)
        | ((u64::from(source) << SOURCE_SHIFT) & SOURCE_MASK)
        | (u64::from(context) & CONTEXT_MASK)
}

/// The tag and mask of a receive (or probe) for `source` (or
/// [`ANY_SOURCE`]) and `tag` (or [`ANY_TAG`]) on `context`.
#[inline]
pub fn recv_tag(tag: i32, source: i32, context: u32) -> (u64, u64) {
    let mut mask = !0u64;
    let mut value = u64::from(context) & CONTEXT_MASK;
    if source == ANY_SOURCE {
        mask &= !SOURCE_MASK;
    } else {
        value |= ((source as u64) << SOURCE_SHIFT) & SOURCE_MASK;
    }
    if tag == ANY_TAG {
        // Keep the sign bit in the mask, with 0 in the value: tags ≥ 0.
        mask &= !(TAG_MASK & !TAG_SIGN);
    } else {
        value |= (tag as u64) << TAG_SHIFT;
    }
    (value, mask)
}

/// The MPI tag of a UCP tag.
#[inline]
pub fn tag_of(ucp_tag: u64) -> i32 {
    // An arithmetic shift of the signed word restores the tag's sign.
    ((ucp_tag as i64) >> TAG_SHIFT) as i32
}

/// The sender's job rank of a UCP tag.
#[inline]
pub fn source_of(ucp_tag: u64) -> u32 {
    ((ucp_tag & SOURCE_MASK) >> SOURCE_SHIFT) as u32
}

/// The context id of a UCP tag.
#[inline]
pub fn context_of(ucp_tag: u64) -> u32 {
    (ucp_tag & CONTEXT_MASK) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a message with UCP tag `sent` matches a receive's tag and
    /// mask, as UCP decides it.
    fn matches(sent: u64, (value, mask): (u64, u64)) -> bool {
        (sent & mask) == (value & mask)
    }

    #[test]
    fn every_field_survives_the_round_trip() {
        let tags = [0, 1, 5, 1000, MAX_TAG, -1, -2, -500_000, MIN_TAG];
        let sources = [0, 1, 3, 65_535, MAX_RANKS - 1];
        let contexts = [0, 1, 2, 77, MAX_CONTEXT];
        for &t in &tags {
            for &s in &sources {
                for &c in &contexts {
                    let u = send_tag(t, s, c);
                    assert_eq!(tag_of(u), t, "tag of {u:#018x}");
                    assert_eq!(source_of(u), s, "source of {u:#018x}");
                    assert_eq!(context_of(u), c, "context of {u:#018x}");
                }
            }
        }
    }

    #[test]
    fn the_fields_do_not_overlap_and_fill_the_word() {
        assert_eq!(TAG_BITS + SOURCE_BITS + CONTEXT_BITS, 64);
        assert_eq!(CONTEXT_MASK & SOURCE_MASK, 0);
        assert_eq!(SOURCE_MASK & TAG_MASK, 0);
        assert_eq!(CONTEXT_MASK | SOURCE_MASK | TAG_MASK, !0);
        assert_eq!(send_tag(-1, MAX_RANKS - 1, MAX_CONTEXT), !0);
        assert_eq!(send_tag(0, 0, 0), 0);
    }

    #[test]
    fn the_limits_are_the_fields_widths() {
        assert_eq!(MAX_TAG, 8_388_607);
        assert_eq!(MIN_TAG, -8_388_608);
        assert_eq!(LIMITS.min_tag(), MIN_TAG);
        assert_eq!(MAX_CONTEXT, 1_048_575);
        assert_eq!(MAX_RANKS, 1_048_576);
        // The MPI layer's collectives use tags down to -500,000.
        assert!(LIMITS.min_tag() <= -500_000);
    }

    #[test]
    fn a_named_receive_matches_only_its_envelope() {
        let r = recv_tag(7, 3, 12);
        assert_eq!(r.1, !0, "a receive naming everything masks nothing");
        assert!(matches(send_tag(7, 3, 12), r));
        assert!(!matches(send_tag(8, 3, 12), r));
        assert!(!matches(send_tag(7, 4, 12), r));
        assert!(!matches(send_tag(7, 3, 13), r));
        assert!(!matches(send_tag(-7, 3, 12), r));
    }

    #[test]
    fn any_source_masks_the_source_field_only() {
        let r = recv_tag(7, ANY_SOURCE, 12);
        assert_eq!(r.1, !SOURCE_MASK);
        for s in [0, 1, 999, MAX_RANKS - 1] {
            assert!(matches(send_tag(7, s, 12), r), "source {s}");
        }
        assert!(!matches(send_tag(6, 1, 12), r));
        assert!(!matches(send_tag(7, 1, 11), r));
    }

    #[test]
    fn any_tag_matches_every_tag_of_zero_or_more_and_no_negative_tag() {
        let r = recv_tag(ANY_TAG, 2, 5);
        assert_eq!(r.1, TAG_SIGN | SOURCE_MASK | CONTEXT_MASK);
        for t in [0, 1, 42, MAX_TAG] {
            assert!(matches(send_tag(t, 2, 5), r), "tag {t}");
        }
        for t in [-1, -2, -500_000, MIN_TAG] {
            assert!(!matches(send_tag(t, 2, 5), r), "internal tag {t}");
        }
        assert!(!matches(send_tag(3, 1, 5), r));
        assert!(!matches(send_tag(3, 2, 4), r));
    }

    #[test]
    fn both_wildcards_keep_the_context_and_the_sign() {
        let r = recv_tag(ANY_TAG, ANY_SOURCE, 9);
        assert_eq!(r.1, TAG_SIGN | CONTEXT_MASK);
        assert!(matches(send_tag(100, 77, 9), r));
        assert!(!matches(send_tag(100, 77, 10), r));
        assert!(!matches(send_tag(-3, 77, 9), r));
    }

    #[test]
    fn negative_tags_are_matched_by_their_own_value() {
        // -1 is ANY_TAG in a receive, so internal tags start at -2.
        for t in [-2, -3, -499_999, -500_000, MIN_TAG] {
            let r = recv_tag(t, ANY_SOURCE, 0);
            assert!(matches(send_tag(t, 1, 0), r), "tag {t}");
            assert!(!matches(send_tag(t + 1, 1, 0), r), "tag {} for {t}", t + 1);
            let opposite = (-i64::from(t)).min(i64::from(MAX_TAG)) as i32;
            assert!(
                !matches(send_tag(opposite, 1, 0), r),
                "tag {opposite} for {t}"
            );
        }
    }

    #[test]
    fn contexts_never_match_each_other() {
        for (a, b) in [(0, 1), (1, 0), (5, MAX_CONTEXT), (MAX_CONTEXT, 0)] {
            assert!(!matches(send_tag(1, 0, a), recv_tag(1, 0, b)));
            assert!(!matches(
                send_tag(1, 0, a),
                recv_tag(ANY_TAG, ANY_SOURCE, b)
            ));
        }
    }
}

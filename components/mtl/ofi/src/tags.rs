//! OFI tag layouts: how the MPI envelope (communicator context id, source
//! rank, MPI tag) and the synchronous-send protocol travel in the 64-bit
//! libfabric tag (`fi_tagged(3)`).
//!
//! MPI needs 96 bits per message (32-bit context id, 32-bit source rank,
//! 32-bit tag) and the MTL adds 2 protocol bits, but an OFI tag has 64 bits.
//! `mtl_ofi_tag_mode` ([`TagMode`]) picks one of three layouts (most
//! significant bit on the left):
//!
//! ```text
//!                bit 63                                                       bit 0
//! ofi_tag_1      | context 12 (63..52) | source 18 (51..34) | A S | tag 32 (31..0) |
//! ofi_tag_2      | context 24 (63..40) | source 18 (39..22) | A S | tag 20 (19..0) |
//! ofi_tag_full   | unused 2 (63..62) | context 28 (61..34)  | A S | tag 32 (31..0) |
//! ```
//!
//! `S` (the low protocol bit, right above the tag field: bit 32, or 20 in
//! `ofi_tag_2`) marks a synchronous send, `A` (the high one: bit 33, or 21)
//! marks the acknowledgement of a synchronous send.
//! In `ofi_tag_full` the source rank is not in the tag: the sender passes
//! it as the 32-bit remote CQ data (`FI_REMOTE_CQ_DATA`) and receives from
//! one source are directed at that peer's address (`FI_DIRECTED_RECV`).
//!
//! **Tags.** A tag (`i32`) is stored as two's complement truncated to the
//! tag field's width `w` and sign-extended when decoded, so a layout
//! carries `-2^(w-1) ..= 2^(w-1) - 1` ([`TagLayout::min_tag`],
//! [`TagLayout::max_tag`]): MPI tags are ≥ 0, the library's internal tags
//! are negative. `ANY_TAG` (−1 on a receive) ignores the low `w - 1` bits
//! of the tag field and requires its sign bit to be 0: it matches every
//! tag ≥ 0 and no internal tag. `ANY_SOURCE` (−1) ignores the source field
//! (in `ofi_tag_full` the receive is simply not directed).
//!
//! **Provider-reserved bits.** A provider that keeps high-order tag bits
//! for itself says so with leading zero bits in its `mem_tag_format`
//! (`fi_endpoint(3)`); 0 means no constraint. Reserved bits come out of the
//! context-id field only (in `ofi_tag_full` the 2 unused top bits absorb
//! the first two); a layout whose context-id field would fall below
//! 8 bits (256 communicators) is refused.
//!
//! **Synchronous sends and their acknowledgements.** Every message's
//! protocol field is `00` (standard), `01` (sync: `S` set) or `10` (ack:
//! `A` set); `11` is never sent. An application receive
//! ([`TagLayout::recv_match`]) puts `00` in the protocol field and ignores
//! only `S`, so it matches standard and synchronous sends alike while `A`
//! must be 0: no application receive, wildcards included, can match an
//! acknowledgement. The peer that completes the receive of a synchronous
//! send answers with an ordinary message whose tag is
//! `send_tag(context, its own rank, tag, Proto::Ack)`, sent to the
//! synchronous sender (in `ofi_tag_full` with its rank as CQ data, like any
//! send); the synchronous sender waits for it with
//! [`TagLayout::ack_match`], which requires the protocol field to be
//! exactly `10` and ignores no bit, so it matches neither application
//! sends (`A` = 0) nor acks for another context, tag or (where the tag
//! carries it) peer.

use std::fmt;
use std::str::FromStr;

/// A receive's source that accepts any sender (`MPI_ANY_SOURCE`).
const ANY_SOURCE: i32 = -1;
/// A receive's tag that accepts every tag ≥ 0 (`MPI_ANY_TAG`).
const ANY_TAG: i32 = -1;
/// Width of the protocol field (sync bit, then ack bit).
const PROTO_BITS: u32 = 2;
/// Narrowest context-id field accepted after provider reservations
/// (256 communicators).
const MIN_CONTEXT_BITS: u32 = 8;
/// The capabilities `ofi_tag_full` needs.
const CAP_CQ_DATA: &str = "FI_REMOTE_CQ_DATA";
const CAP_DIRECTED: &str = "FI_DIRECTED_RECV";

/// The low `bits` bits set (`bits` ≤ 63).
const fn low_mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

/// The value of the `mtl_ofi_tag_mode` parameter: which tag layout to use.
///
/// Default: [`TagMode::Auto`]. Parsed ([`FromStr`]) from and displayed as
/// `auto`, `ofi_tag_1`, `ofi_tag_2`, `ofi_tag_full`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TagMode {
    /// `auto` (the default): `ofi_tag_full` when the provider offers both
    /// `FI_REMOTE_CQ_DATA` and `FI_DIRECTED_RECV`, else `ofi_tag_1`.
    #[default]
    Auto,
    /// `ofi_tag_1`: context id 12 bits, source 18, protocol 2, tag 32.
    Tag1,
    /// `ofi_tag_2`: context id 24 bits, source 18, protocol 2, tag 20.
    Tag2,
    /// `ofi_tag_full`: context id 28 bits, protocol 2, tag 32 (the top
    /// 2 bits unused); the source rank travels in the remote CQ data.
    Full,
}

impl TagMode {
    /// Every mode, in the order the parameter's documentation lists them.
    pub const ALL: [TagMode; 4] = [TagMode::Auto, TagMode::Tag1, TagMode::Tag2, TagMode::Full];

    /// The parameter value naming this mode (`"auto"`, `"ofi_tag_1"`,
    /// `"ofi_tag_2"`, `"ofi_tag_full"`).
    pub fn as_str(self) -> &'static str {
        match self {
            TagMode::Auto => "auto",
            TagMode::Tag1 => "ofi_tag_1",
            TagMode::Tag2 => "ofi_tag_2",
            TagMode::Full => "ofi_tag_full",
        }
    }

    /// Nominal widths (context id, source, tag) of a concrete layout;
    /// `None` for `Auto`.
    fn widths(self) -> Option<(u32, u32, u32)> {
        match self {
            TagMode::Auto => None,
            TagMode::Tag1 => Some((12, 18, 32)),
            TagMode::Tag2 => Some((24, 18, 20)),
            TagMode::Full => Some((28, 0, 32)),
        }
    }
}

impl fmt::Display for TagMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TagMode {
    type Err = String;

    /// Parses one of the four parameter values, exactly (case-sensitive, no
    /// surrounding blanks).
    ///
    /// # Errors
    ///
    /// Any other text: a sentence quoting it and listing the four values.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TagMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown OFI tag mode '{s}' (mtl_ofi_tag_mode): expected one of \
                     auto, ofi_tag_1, ofi_tag_2, ofi_tag_full"
                )
            })
    }
}

/// What the selected libfabric provider offers that matters to the tag
/// layout (from its `fi_info`).
///
/// Default: an unnamed provider with neither capability and
/// `mem_tag_format` 0 (no reserved bits).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProviderTagSupport {
    /// The provider's name (`fi_info.fabric_attr.prov_name`), quoted in
    /// error sentences.
    pub name: String,
    /// The provider offers `FI_REMOTE_CQ_DATA` (32 bits or more).
    pub remote_cq_data: bool,
    /// The provider offers `FI_DIRECTED_RECV`.
    pub directed_recv: bool,
    /// `fi_info.ep_attr.mem_tag_format`: its leading zero bits are tag bits
    /// the provider reserves; 0 means no constraint.
    pub mem_tag_format: u64,
}

impl ProviderTagSupport {
    /// Number of high-order tag bits the provider reserves: the leading
    /// zeros of `mem_tag_format`, 0 when it is 0.
    fn reserved_bits(&self) -> u32 {
        if self.mem_tag_format == 0 {
            0
        } else {
            self.mem_tag_format.leading_zeros()
        }
    }

    /// The capabilities `ofi_tag_full` needs that this provider lacks.
    fn missing_for_full(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if !self.remote_cq_data {
            missing.push(CAP_CQ_DATA);
        }
        if !self.directed_recv {
            missing.push(CAP_DIRECTED);
        }
        missing
    }
}

/// The protocol bits of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proto {
    /// A standard (or buffered, ready) send: protocol field `00`.
    Standard,
    /// A synchronous send: the receiver must acknowledge (`01`, the low
    /// protocol bit).
    Sync,
    /// The acknowledgement of a synchronous send (`10`, the high protocol
    /// bit).
    Ack,
}

impl Proto {
    /// The 2-bit protocol field value.
    fn bits(self) -> u64 {
        match self {
            Proto::Standard => 0b00,
            Proto::Sync => 0b01,
            Proto::Ack => 0b10,
        }
    }
}

/// The envelope read back from a completed receive ([`TagLayout::decode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// The communicator's context id.
    pub context: u32,
    /// The sender's rank (from the remote CQ data in `ofi_tag_full`).
    pub source: u32,
    /// The tag, sign-extended from the tag field.
    pub tag: i32,
    /// The protocol bits.
    pub proto: Proto,
}

/// One concrete tag layout: field widths and positions, after the
/// provider's reserved bits have been taken out of the context-id field.
///
/// Built by [`TagLayout::choose`]; displayed ([`fmt::Display`]) as a
/// one-line description for verbose logs, e.g. `ofi_tag_1: context id 12
/// bits (max 4095), source 18 bits (max 262143), tag 32 bits (max
/// 2147483647)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagLayout {
    /// `Tag1`, `Tag2` or `Full`, never `Auto`.
    mode: TagMode,
    /// Width of the context-id field (after reservations).
    context_bits: u32,
    /// Width of the source field (0 in `ofi_tag_full`).
    source_bits: u32,
    /// Width of the tag field (the protocol field sits right above it).
    tag_bits: u32,
    /// High-order bits the provider reserves (`mem_tag_format`).
    reserved_bits: u32,
}

impl TagLayout {
    /// The layout for `mode` on `provider`.
    ///
    /// `Auto` resolves to `ofi_tag_full` when the provider offers both
    /// `FI_REMOTE_CQ_DATA` and `FI_DIRECTED_RECV`, else to `ofi_tag_1`. The
    /// provider's reserved bits (leading zeros of a nonzero
    /// `mem_tag_format`) shrink the context-id field; in `ofi_tag_full` the
    /// 2 unused top bits absorb the first two.
    ///
    /// # Errors
    ///
    /// - `Full` on a provider without `FI_REMOTE_CQ_DATA` or
    ///   `FI_DIRECTED_RECV`: a sentence naming the provider and the missing
    ///   capability(ies), suggesting `ofi_tag_1`/`ofi_tag_2` through
    ///   `--mca mtl_ofi_tag_mode` or another provider.
    /// - A reservation that leaves the context-id field fewer than 8 bits
    ///   (256 communicators): a sentence naming the provider, its
    ///   `mem_tag_format` and the mode, suggesting the modes that would fit
    ///   (`ofi_tag_2`, `ofi_tag_full`) or another provider.
    pub fn choose(mode: TagMode, provider: &ProviderTagSupport) -> Result<TagLayout, String> {
        let missing = provider.missing_for_full();
        let resolved = match mode {
            TagMode::Auto if missing.is_empty() => TagMode::Full,
            TagMode::Auto => TagMode::Tag1,
            TagMode::Full if !missing.is_empty() => {
                let lacks = match missing.as_slice() {
                    [one] => format!("does not offer {one}"),
                    _ => format!("offers neither {CAP_CQ_DATA} nor {CAP_DIRECTED}"),
                };
                return Err(format!(
                    "the OFI provider '{}' {lacks}, which mtl_ofi_tag_mode ofi_tag_full needs \
                     (it carries the source rank in the remote CQ data and directs receives \
                     from one source at its address); choose ofi_tag_1 or ofi_tag_2 with \
                     --mca mtl_ofi_tag_mode, or another provider \
                     (--mca mtl_ofi_provider_include)",
                    provider.name
                ));
            }
            m => m,
        };
        let reserved = provider.reserved_bits();
        match Self::with_reservation(resolved, reserved) {
            Ok(layout) => Ok(layout),
            Err(left) => {
                let (nominal, _, _) = resolved.widths().unwrap_or_default();
                let mode_text = if mode == TagMode::Auto {
                    format!("auto (which chose {resolved})")
                } else {
                    resolved.to_string()
                };
                let fitting: Vec<String> = [TagMode::Tag2, TagMode::Full]
                    .into_iter()
                    .filter(|&m| m != resolved)
                    .filter(|&m| m != TagMode::Full || missing.is_empty())
                    .filter_map(|m| {
                        Self::with_reservation(m, reserved)
                            .ok()
                            .map(|l| format!("{m} ({} context-id bits left)", l.context_bits))
                    })
                    .collect();
                let advice = if fitting.is_empty() {
                    "choose another provider (--mca mtl_ofi_provider_include)".to_string()
                } else {
                    format!(
                        "choose {} with --mca mtl_ofi_tag_mode, or another provider \
                         (--mca mtl_ofi_provider_include)",
                        fitting.join(" or ")
                    )
                };
                Err(format!(
                    "the OFI provider '{}' reserves the {reserved} high-order tag bits \
                     (mem_tag_format {:#018x}), which would shrink the context-id field of \
                     mtl_ofi_tag_mode {mode_text} from {nominal} to {left} bits, fewer than \
                     the {MIN_CONTEXT_BITS} needed for 256 communicators; {advice}",
                    provider.name, provider.mem_tag_format
                ))
            }
        }
    }

    /// The concrete layout `mode` (not `Auto`) with `reserved` high-order
    /// bits taken away, or the context-id width that would be left when it
    /// is too narrow.
    fn with_reservation(mode: TagMode, reserved: u32) -> Result<TagLayout, u32> {
        let (nominal, source_bits, tag_bits) = mode.widths().unwrap_or((0, 0, 0));
        let below = source_bits + PROTO_BITS + tag_bits;
        let room = 64u32.saturating_sub(below).saturating_sub(reserved);
        let context_bits = nominal.min(room);
        if context_bits < MIN_CONTEXT_BITS {
            return Err(context_bits);
        }
        Ok(TagLayout {
            mode,
            context_bits,
            source_bits,
            tag_bits,
            reserved_bits: reserved,
        })
    }

    /// The layout's parameter name: `"ofi_tag_1"`, `"ofi_tag_2"` or
    /// `"ofi_tag_full"` (never `"auto"`).
    pub fn name(&self) -> &'static str {
        self.mode.as_str()
    }

    /// True in `ofi_tag_full`: sends carry the source rank as 32-bit remote
    /// CQ data (`fi_tsenddata`), receives from one source are directed at
    /// its address, and [`decode`](Self::decode) reads the source from the
    /// completion's CQ data.
    pub fn source_in_cq_data(&self) -> bool {
        self.source_bits == 0
    }

    /// The largest tag the layout carries: `2^(w-1) - 1` for a `w`-bit tag
    /// field (`i32::MAX` in `ofi_tag_1` and `ofi_tag_full`, 524,287 in
    /// `ofi_tag_2`).
    pub fn max_tag(&self) -> i32 {
        low_mask(self.tag_bits - 1) as i32
    }

    /// The smallest (most negative) tag the layout carries: `-2^(w-1)` for
    /// a `w`-bit tag field (`i32::MIN`, or −524,288 in `ofi_tag_2`).
    pub fn min_tag(&self) -> i32 {
        -self.max_tag() - 1
    }

    /// The largest context id, after the provider's reserved bits: 4,095 in
    /// `ofi_tag_1`, 16,777,215 in `ofi_tag_2`, 268,435,455 in `ofi_tag_full`
    /// when nothing is reserved; at least 255.
    pub fn max_context(&self) -> u32 {
        low_mask(self.context_bits) as u32
    }

    /// The largest source rank: 262,143 in `ofi_tag_1` and `ofi_tag_2`;
    /// `None` in `ofi_tag_full` (any `u32` fits the 32-bit CQ data).
    pub fn max_source(&self) -> Option<u32> {
        (!self.source_in_cq_data()).then(|| low_mask(self.source_bits) as u32)
    }

    fn proto_shift(&self) -> u32 {
        self.tag_bits
    }

    fn source_shift(&self) -> u32 {
        self.tag_bits + PROTO_BITS
    }

    fn context_shift(&self) -> u32 {
        self.source_shift() + self.source_bits
    }

    fn sync_bit(&self) -> u64 {
        Proto::Sync.bits() << self.proto_shift()
    }

    /// `tag` as two's complement truncated to the tag field.
    fn tag_field(&self, tag: i32) -> u64 {
        u64::from(tag as u32) & low_mask(self.tag_bits)
    }

    /// The OFI tag of a message sent by rank `source` on context `context`
    /// with MPI (or internal) tag `tag` and protocol `proto`. In
    /// `ofi_tag_full` `source` is not encoded: send it as the CQ data.
    ///
    /// Callers check the limits first ([`check`](Self::check)); values out
    /// of range are truncated (and panic in debug builds).
    pub fn send_tag(&self, context: u32, source: u32, tag: i32, proto: Proto) -> u64 {
        debug_assert!(
            self.check(context, source, tag).is_ok(),
            "{}",
            self.check(context, source, tag).unwrap_err()
        );
        let mut bits = (u64::from(context) & low_mask(self.context_bits)) << self.context_shift();
        if !self.source_in_cq_data() {
            bits |= (u64::from(source) & low_mask(self.source_bits)) << self.source_shift();
        }
        bits | (proto.bits() << self.proto_shift()) | self.tag_field(tag)
    }

    /// The `(tag, ignore)` pair of an application (or internal) receive on
    /// context `context` from `source` with tag `tag`; a send matches when
    /// `(send ^ tag) & !ignore == 0`.
    ///
    /// `source` −1 (`ANY_SOURCE`) ignores the source field (in
    /// `ofi_tag_full` the source is not in the tag at all: the caller
    /// directs the receive at the source's address unless it is −1). `tag`
    /// −1 (`ANY_TAG`) ignores the tag field's low `w - 1` bits and requires
    /// its sign bit to be 0 (every tag ≥ 0, no internal tag). The sync bit
    /// is always ignored (standard and synchronous sends both match) and
    /// the ack bit must be 0 (acknowledgements never match).
    ///
    /// Callers check the limits first; in debug builds a source below −1 or
    /// a value out of range panics.
    pub fn recv_match(&self, context: u32, source: i32, tag: i32) -> (u64, u64) {
        debug_assert!(
            source >= ANY_SOURCE,
            "receive source {source} below ANY_SOURCE"
        );
        debug_assert!(
            self.check(
                context,
                source.max(0) as u32,
                if tag == ANY_TAG { 0 } else { tag }
            )
            .is_ok(),
            "receive envelope out of range for {}",
            self.name()
        );
        let mut bits = (u64::from(context) & low_mask(self.context_bits)) << self.context_shift();
        let mut ignore = self.sync_bit();
        if !self.source_in_cq_data() {
            let field = low_mask(self.source_bits);
            if source == ANY_SOURCE {
                ignore |= field << self.source_shift();
            } else {
                bits |= (u64::from(source as u32) & field) << self.source_shift();
            }
        }
        if tag == ANY_TAG {
            ignore |= low_mask(self.tag_bits - 1);
        } else {
            bits |= self.tag_field(tag);
        }
        (bits, ignore)
    }

    /// The `(tag, ignore)` pair with which a synchronous sender waits for
    /// its acknowledgement: the ack `peer` (the synchronous send's
    /// destination) sends back with `send_tag(context, peer, tag,
    /// Proto::Ack)`, `tag` being the synchronous send's tag.
    ///
    /// The match is exact (`ignore` is 0): the protocol field must be `10`,
    /// so no application send matches. In `ofi_tag_full` the peer is not in
    /// the tag: the caller directs the receive at the peer's address.
    pub fn ack_match(&self, context: u32, peer: u32, tag: i32) -> (u64, u64) {
        (self.send_tag(context, peer, tag, Proto::Ack), 0)
    }

    /// The envelope of a completed receive: `ofi_tag` from the completion,
    /// `cq_data` its remote CQ data (read only in `ofi_tag_full`, where its
    /// low 32 bits are the source rank). The tag is sign-extended; a
    /// protocol field `11` (never sent) decodes as [`Proto::Ack`].
    pub fn decode(&self, ofi_tag: u64, cq_data: u64) -> Decoded {
        let context = (ofi_tag >> self.context_shift()) & low_mask(self.context_bits);
        let source = if self.source_in_cq_data() {
            cq_data & low_mask(32)
        } else {
            (ofi_tag >> self.source_shift()) & low_mask(self.source_bits)
        };
        let unused = 64 - self.tag_bits;
        let tag = (((ofi_tag << unused) as i64) >> unused) as i32;
        let proto = match (ofi_tag >> self.proto_shift()) & low_mask(PROTO_BITS) {
            0b00 => Proto::Standard,
            0b01 => Proto::Sync,
            _ => Proto::Ack,
        };
        Decoded {
            context: context as u32,
            source: source as u32,
            tag,
            proto,
        }
    }

    /// Whether a message with this envelope fits the layout.
    ///
    /// # Errors
    ///
    /// The first field out of range (context id, then source rank, then
    /// tag): a sentence naming the field, the value, the largest (or, for
    /// a tag below the range, smallest) allowed and the mode.
    pub fn check(&self, context: u32, source: u32, tag: i32) -> Result<(), String> {
        let mode = self.name();
        if context > self.max_context() {
            let reserved = if self.context_bits < self.mode.widths().map_or(0, |w| w.0) {
                format!(", the provider reserving {} tag bits", self.reserved_bits)
            } else {
                String::new()
            };
            return Err(format!(
                "context id {context} does not fit the OFI tag layout {mode}: the largest \
                 context id is {} ({} bits{reserved})",
                self.max_context(),
                self.context_bits
            ));
        }
        if let Some(max) = self.max_source() {
            if source > max {
                return Err(format!(
                    "source rank {source} does not fit the OFI tag layout {mode}: the largest \
                     source rank is {max} ({} bits; ofi_tag_full carries any rank)",
                    self.source_bits
                ));
            }
        }
        if tag > self.max_tag() {
            return Err(format!(
                "tag {tag} does not fit the OFI tag layout {mode}: the largest tag is {} \
                 ({} bits)",
                self.max_tag(),
                self.tag_bits
            ));
        }
        if tag < self.min_tag() {
            return Err(format!(
                "tag {tag} does not fit the OFI tag layout {mode}: the smallest tag is {} \
                 ({} bits)",
                self.min_tag(),
                self.tag_bits
            ));
        }
        Ok(())
    }
}

impl fmt::Display for TagLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: context id {} bits (max {}), ",
            self.name(),
            self.context_bits,
            self.max_context()
        )?;
        match self.max_source() {
            Some(max) => write!(f, "source {} bits (max {max}), ", self.source_bits)?,
            None => f.write_str("source in remote CQ data (32 bits), ")?,
        }
        write!(f, "tag {} bits (max {})", self.tag_bits, self.max_tag())?;
        if self.reserved_bits > 0 {
            write!(
                f,
                "; provider reserves {} high-order bits",
                self.reserved_bits
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

//! Tests of the OFI tag layouts: bit positions, limits, round trips,
//! wildcard and protocol masking, layout choice and sentences.

use super::*;

/// Whether a send with OFI tag `send` matches a receive posted with
/// `(recv, ignore)`, the way a libfabric provider decides it.
fn matches(send: u64, recv: u64, ignore: u64) -> bool {
    (send ^ recv) & !ignore == 0
}

fn provider(remote_cq_data: bool, directed_recv: bool, mem_tag_format: u64) -> ProviderTagSupport {
    ProviderTagSupport {
        name: "testprov".to_string(),
        remote_cq_data,
        directed_recv,
        mem_tag_format,
    }
}

/// The layout for a concrete mode on a provider offering everything and
/// reserving nothing.
fn layout(mode: TagMode) -> TagLayout {
    TagLayout::choose(mode, &provider(true, true, 0)).expect("layout")
}

fn all_layouts() -> [TagLayout; 3] {
    [
        layout(TagMode::Tag1),
        layout(TagMode::Tag2),
        layout(TagMode::Full),
    ]
}

/// The positions of the set bits of `x`, ascending.
fn bits(x: u64) -> Vec<u32> {
    (0..64).filter(|b| (x >> b) & 1 == 1).collect()
}

fn span(lo: u32, hi: u32) -> Vec<u32> {
    (lo..=hi).collect()
}

/// Sources worth sending from: the extremes of the layout.
fn sources(l: &TagLayout) -> Vec<u32> {
    match l.max_source() {
        Some(max) => vec![0, 1, max / 2, max],
        None => vec![0, 1, 262_144, u32::MAX],
    }
}

/// Tags worth sending: 0, 1, the largest, internal ones, the smallest.
fn tags(l: &TagLayout) -> Vec<i32> {
    vec![0, 1, l.max_tag(), -1, -2, -500_000, l.min_tag()]
}

/// The CQ data a sender would attach (and junk where it is not read).
fn cq_for(l: &TagLayout, source: u32) -> u64 {
    if l.source_in_cq_data() {
        u64::from(source)
    } else {
        0xdead_beef_dead_beef
    }
}

const PROTOS: [Proto; 3] = [Proto::Standard, Proto::Sync, Proto::Ack];

#[test]
fn tag_1_field_positions() {
    let l = layout(TagMode::Tag1);
    assert_eq!(bits(l.send_tag(1, 0, 0, Proto::Standard)), [52]);
    assert_eq!(bits(l.send_tag(0, 1, 0, Proto::Standard)), [34]);
    assert_eq!(bits(l.send_tag(0, 0, 0, Proto::Sync)), [32]);
    assert_eq!(bits(l.send_tag(0, 0, 0, Proto::Ack)), [33]);
    assert_eq!(bits(l.send_tag(0, 0, 1, Proto::Standard)), [0]);
    assert_eq!(l.send_tag(0, 0, 0, Proto::Standard), 0);
    assert_eq!(bits(l.send_tag(4095, 0, 0, Proto::Standard)), span(52, 63));
    assert_eq!(
        bits(l.send_tag(0, 262_143, 0, Proto::Standard)),
        span(34, 51)
    );
    assert_eq!(bits(l.send_tag(0, 0, -1, Proto::Standard)), span(0, 31));
    assert_eq!(
        bits(l.send_tag(0, 0, i32::MAX, Proto::Standard)),
        span(0, 30)
    );
    assert_eq!(bits(l.send_tag(0, 0, i32::MIN, Proto::Standard)), [31]);
    assert_eq!(
        l.send_tag(0xabc, 0x2_1234, 0x1234_5678, Proto::Sync),
        0xabc8_48d1_1234_5678
    );
}

#[test]
fn tag_2_field_positions() {
    let l = layout(TagMode::Tag2);
    assert_eq!(bits(l.send_tag(1, 0, 0, Proto::Standard)), [40]);
    assert_eq!(bits(l.send_tag(0, 1, 0, Proto::Standard)), [22]);
    assert_eq!(bits(l.send_tag(0, 0, 0, Proto::Sync)), [20]);
    assert_eq!(bits(l.send_tag(0, 0, 0, Proto::Ack)), [21]);
    assert_eq!(bits(l.send_tag(0, 0, 1, Proto::Standard)), [0]);
    assert_eq!(
        bits(l.send_tag(16_777_215, 0, 0, Proto::Standard)),
        span(40, 63)
    );
    assert_eq!(
        bits(l.send_tag(0, 262_143, 0, Proto::Standard)),
        span(22, 39)
    );
    assert_eq!(bits(l.send_tag(0, 0, -1, Proto::Standard)), span(0, 19));
    assert_eq!(
        bits(l.send_tag(0, 0, 524_287, Proto::Standard)),
        span(0, 18)
    );
    assert_eq!(bits(l.send_tag(0, 0, -524_288, Proto::Standard)), [19]);
    assert_eq!(
        l.send_tag(0xab_cdef, 0x2_1234, 0x5_6789, Proto::Ack),
        0xabcd_ef84_8d25_6789
    );
}

#[test]
fn tag_full_field_positions() {
    let l = layout(TagMode::Full);
    assert_eq!(bits(l.send_tag(1, 0, 0, Proto::Standard)), [34]);
    assert_eq!(bits(l.send_tag(0, 0, 0, Proto::Sync)), [32]);
    assert_eq!(bits(l.send_tag(0, 0, 0, Proto::Ack)), [33]);
    assert_eq!(bits(l.send_tag(0, 0, 1, Proto::Standard)), [0]);
    // The source is not in the tag.
    assert_eq!(l.send_tag(0, 1, 0, Proto::Standard), 0);
    assert_eq!(l.send_tag(0, u32::MAX, 0, Proto::Standard), 0);
    // The context id stops at bit 61: the two top bits stay unused.
    assert_eq!(
        bits(l.send_tag(268_435_455, 0, 0, Proto::Standard)),
        span(34, 61)
    );
    assert_eq!(bits(l.send_tag(0, 0, -1, Proto::Standard)), span(0, 31));
    assert_eq!(
        l.send_tag(0xab_cdef, 7, -0x789a_bcdf, Proto::Sync),
        0x2af_37bd_8765_4321
    );
}

#[test]
fn limits_stated_by_the_reference() {
    let [t1, t2, full] = all_layouts();
    assert_eq!(t1.max_context(), 4_095);
    assert_eq!(t2.max_context(), 16_777_215);
    assert_eq!(full.max_context(), 268_435_455);
    assert_eq!(t1.max_source(), Some(262_143));
    assert_eq!(t2.max_source(), Some(262_143));
    assert_eq!(full.max_source(), None);
    assert_eq!(t1.max_tag(), i32::MAX);
    assert_eq!(t2.max_tag(), 524_287);
    assert_eq!(full.max_tag(), i32::MAX);
    assert_eq!(t1.min_tag(), i32::MIN);
    assert_eq!(t2.min_tag(), -524_288);
    assert_eq!(full.min_tag(), i32::MIN);
    // The library's internal tags go down to -500,000: every layout fits them.
    assert!(all_layouts().iter().all(|l| l.min_tag() <= -500_000));
    assert!(!t1.source_in_cq_data());
    assert!(!t2.source_in_cq_data());
    assert!(full.source_in_cq_data());
    assert_eq!(
        [t1.name(), t2.name(), full.name()],
        ["ofi_tag_1", "ofi_tag_2", "ofi_tag_full"]
    );
}

#[test]
fn round_trips_of_extreme_values() {
    for l in all_layouts() {
        for context in [0, 1, l.max_context() / 3, l.max_context()] {
            for source in sources(&l) {
                for tag in tags(&l) {
                    for proto in PROTOS {
                        let t = l.send_tag(context, source, tag, proto);
                        let want = Decoded {
                            context,
                            source,
                            tag,
                            proto,
                        };
                        assert_eq!(l.decode(t, cq_for(&l, source)), want, "{l}");
                    }
                }
            }
        }
    }
}

#[test]
fn decode_reads_only_its_fields() {
    // Full: only the low 32 bits of the CQ data are the source.
    let full = layout(TagMode::Full);
    let d = full.decode(full.send_tag(5, 0, -7, Proto::Sync), 0xffff_ffff_0000_002a);
    assert_eq!(
        (d.context, d.source, d.tag, d.proto),
        (5, 42, -7, Proto::Sync)
    );
    // The unused top bits of full, and reserved bits, do not leak into the context id.
    let d = full.decode((0b11 << 62) | full.send_tag(9, 0, 3, Proto::Standard), 1);
    assert_eq!((d.context, d.tag), (9, 3));
    let t1 = TagLayout::choose(
        TagMode::Tag1,
        &provider(false, false, 0x0fff_ffff_ffff_ffff),
    )
    .expect("8-bit context id");
    let d = t1.decode((0xf << 60) | t1.send_tag(200, 3, 4, Proto::Standard), 0);
    assert_eq!((d.context, d.source, d.tag), (200, 3, 4));
    // A protocol field of 11 is never sent; the ack bit wins.
    assert_eq!(
        layout(TagMode::Tag1).decode(0b11 << 32, 0).proto,
        Proto::Ack
    );
}

/// Every combination of sends and application receives matches exactly
/// when MPI says it should.
#[test]
fn application_receives_match_exactly_the_right_sends() {
    for l in all_layouts() {
        let contexts = [0, 1, l.max_context()];
        let send_sources = sources(&l);
        let mut recv_sources = vec![ANY_SOURCE];
        recv_sources.extend(send_sources.iter().map(|&s| s as i32).filter(|&s| s >= 0));
        let send_tags = tags(&l);
        let recv_tags: Vec<i32> = send_tags.iter().copied().filter(|&t| t != -1).collect();
        let recv_tags: Vec<i32> = [ANY_TAG].into_iter().chain(recv_tags).collect();
        let mut matched = 0;
        for &sc in &contexts {
            for &ss in &send_sources {
                for &st in &send_tags {
                    for sp in PROTOS {
                        let send = l.send_tag(sc, ss, st, sp);
                        for &rc in &contexts {
                            for &rs in &recv_sources {
                                for &rt in &recv_tags {
                                    let (recv, ignore) = l.recv_match(rc, rs, rt);
                                    // In full the source is chosen by directing the
                                    // receive, not by the tag.
                                    let source_ok = l.source_in_cq_data()
                                        || rs == ANY_SOURCE
                                        || rs as u32 == ss;
                                    let tag_ok = if rt == ANY_TAG { st >= 0 } else { rt == st };
                                    let want = sc == rc && source_ok && tag_ok && sp != Proto::Ack;
                                    assert_eq!(
                                        matches(send, recv, ignore),
                                        want,
                                        "{l}: send ({sc}, {ss}, {st}, {sp:?}) vs receive \
                                         ({rc}, {rs}, {rt})"
                                    );
                                    matched += usize::from(want);
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(matched > 100, "{l}: only {matched} matches");
    }
}

#[test]
fn any_tag_matches_tags_from_zero_up_only() {
    for l in all_layouts() {
        let (recv, ignore) = l.recv_match(3, 2, ANY_TAG);
        for tag in [0, 1, 77, l.max_tag()] {
            assert!(
                matches(l.send_tag(3, 2, tag, Proto::Standard), recv, ignore),
                "{l}"
            );
        }
        for tag in [-1, -2, -500_000, l.min_tag()] {
            assert!(
                !matches(l.send_tag(3, 2, tag, Proto::Standard), recv, ignore),
                "{l}"
            );
        }
        // The ignore mask is the tag field's low w-1 bits plus the sync bit.
        let w = l.max_tag().count_ones(); // the tag field width minus 1
        assert_eq!(ignore, low_mask(w) | (1 << (w + 1)), "{l}");
        assert_eq!(recv & low_mask(w + 1), 0, "{l}: the sign bit must be 0");
    }
}

#[test]
fn any_source_ignores_the_source_field() {
    let t1 = layout(TagMode::Tag1);
    let (recv, ignore) = t1.recv_match(1, ANY_SOURCE, 5);
    assert_eq!(ignore, (low_mask(18) << 34) | (1 << 32));
    for source in [0, 1, 262_143] {
        assert!(matches(
            t1.send_tag(1, source, 5, Proto::Sync),
            recv,
            ignore
        ));
    }
    let (recv, ignore) = t1.recv_match(1, 7, 5);
    assert!(matches(t1.send_tag(1, 7, 5, Proto::Standard), recv, ignore));
    assert!(!matches(
        t1.send_tag(1, 6, 5, Proto::Standard),
        recv,
        ignore
    ));
    assert!(!matches(
        t1.send_tag(1, 7 | (1 << 17), 5, Proto::Standard),
        recv,
        ignore
    ));
    let t2 = layout(TagMode::Tag2);
    assert_eq!(
        t2.recv_match(1, ANY_SOURCE, 5).1,
        (low_mask(18) << 22) | (1 << 20)
    );
    // Full: no source field, so ANY_SOURCE and a given source post the same tag.
    let full = layout(TagMode::Full);
    assert_eq!(full.recv_match(1, ANY_SOURCE, 5), full.recv_match(1, 9, 5));
    assert_eq!(full.recv_match(1, ANY_SOURCE, 5).1, 1 << 32);
}

/// Application receives ignore the sync bit and nothing else of the
/// protocol field: the ack bit must be 0.
#[test]
fn receives_ignore_the_sync_bit_only() {
    for (l, sync, ack) in [
        (layout(TagMode::Tag1), 32, 33),
        (layout(TagMode::Tag2), 20, 21),
        (layout(TagMode::Full), 32, 33),
    ] {
        for (source, tag) in [(0, 0), (ANY_SOURCE, 4), (1, ANY_TAG), (ANY_SOURCE, ANY_TAG)] {
            let (recv, ignore) = l.recv_match(2, source, tag);
            assert_eq!(ignore & (1 << sync), 1 << sync, "{l}");
            assert_eq!(
                ignore & (1 << ack),
                0,
                "{l}: the ack bit must not be ignored"
            );
            assert_eq!(recv & ((1 << sync) | (1 << ack)), 0, "{l}");
            let standard = l.send_tag(2, 1, 4, Proto::Standard);
            let sync_send = l.send_tag(2, 1, 4, Proto::Sync);
            let want = matches(standard, recv, ignore);
            assert_eq!(matches(sync_send, recv, ignore), want, "{l}");
            // Setting the ack bit on a matching send breaks the match.
            if want {
                assert!(!matches(standard | (1 << ack), recv, ignore), "{l}");
                assert!(!matches(sync_send | (1 << ack), recv, ignore), "{l}");
            }
        }
    }
}

#[test]
fn acks_are_never_matched_by_application_receives() {
    for l in all_layouts() {
        for context in [0, 1, l.max_context()] {
            for source in sources(&l) {
                for tag in tags(&l) {
                    let ack = l.send_tag(context, source, tag, Proto::Ack);
                    for rs in [ANY_SOURCE, 0, source.min(i32::MAX as u32) as i32] {
                        for rt in [ANY_TAG, tag, 0] {
                            let (recv, ignore) = l.recv_match(context, rs, rt);
                            assert!(!matches(ack, recv, ignore), "{l}: ack {ack:#x}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn application_sends_are_never_matched_by_ack_receives() {
    for l in all_layouts() {
        for context in [0, l.max_context()] {
            for peer in sources(&l) {
                for tag in tags(&l) {
                    let (recv, ignore) = l.ack_match(context, peer, tag);
                    assert_eq!(ignore, 0, "{l}: acks are matched exactly");
                    for proto in [Proto::Standard, Proto::Sync] {
                        let send = l.send_tag(context, peer, tag, proto);
                        assert!(!matches(send, recv, ignore), "{l}: {proto:?}");
                    }
                    let ack = l.send_tag(context, peer, tag, Proto::Ack);
                    assert!(matches(ack, recv, ignore), "{l}");
                }
            }
        }
    }
}

#[test]
fn ack_receives_match_their_own_ack_only() {
    for l in all_layouts() {
        let (recv, ignore) = l.ack_match(4, 10, 99);
        let ack = |c, p, t| l.send_tag(c, p, t, Proto::Ack);
        assert!(matches(ack(4, 10, 99), recv, ignore), "{l}");
        assert!(!matches(ack(5, 10, 99), recv, ignore), "{l}: other context");
        assert!(!matches(ack(4, 10, 98), recv, ignore), "{l}: other tag");
        assert!(!matches(ack(4, 10, -99), recv, ignore), "{l}: other tag");
        // The peer: in the tag for tag_1/tag_2, by directing the receive in full.
        assert_eq!(
            matches(ack(4, 11, 99), recv, ignore),
            l.source_in_cq_data(),
            "{l}: other peer"
        );
        let d = l.decode(ack(4, 10, 99), 10);
        assert_eq!(
            (d.context, d.source, d.tag, d.proto),
            (4, 10, 99, Proto::Ack)
        );
    }
}

#[test]
fn auto_resolution() {
    let pick = |cq, directed| TagLayout::choose(TagMode::Auto, &provider(cq, directed, 0));
    assert_eq!(pick(true, true).unwrap().name(), "ofi_tag_full");
    assert_eq!(pick(true, false).unwrap().name(), "ofi_tag_1");
    assert_eq!(pick(false, true).unwrap().name(), "ofi_tag_1");
    assert_eq!(pick(false, false).unwrap().name(), "ofi_tag_1");
    assert_eq!(pick(true, true).unwrap(), layout(TagMode::Full));
    assert_eq!(pick(false, false).unwrap(), layout(TagMode::Tag1));
    // Explicit tag_1/tag_2 need neither capability.
    for mode in [TagMode::Tag1, TagMode::Tag2] {
        let l = TagLayout::choose(mode, &provider(false, false, 0)).unwrap();
        assert_eq!(l.name(), mode.as_str());
    }
}

#[test]
fn full_is_refused_without_either_capability() {
    let cases = [
        (false, true, vec!["FI_REMOTE_CQ_DATA"], "FI_DIRECTED_RECV"),
        (true, false, vec!["FI_DIRECTED_RECV"], "FI_REMOTE_CQ_DATA"),
        (
            false,
            false,
            vec!["FI_REMOTE_CQ_DATA", "FI_DIRECTED_RECV"],
            "",
        ),
    ];
    for (cq, directed, missing, present) in cases {
        let mut p = provider(cq, directed, 0);
        p.name = "sockets".to_string();
        let err = TagLayout::choose(TagMode::Full, &p).unwrap_err();
        assert!(err.contains("'sockets'"), "{err}");
        assert!(err.contains("ofi_tag_full"), "{err}");
        for cap in missing {
            assert!(err.contains(cap), "{err}");
        }
        if !present.is_empty() {
            assert!(!err.contains(present), "{err}: names a capability it has");
        }
        for advice in [
            "ofi_tag_1",
            "ofi_tag_2",
            "--mca mtl_ofi_tag_mode",
            "another provider",
        ] {
            assert!(err.contains(advice), "{err}: no '{advice}'");
        }
    }
    let err = TagLayout::choose(TagMode::Full, &provider(false, false, 0)).unwrap_err();
    assert!(
        err.contains("offers neither FI_REMOTE_CQ_DATA nor FI_DIRECTED_RECV"),
        "{err}"
    );
}

#[test]
fn mem_tag_format_without_reservation() {
    for format in [0, u64::MAX, 0xaaaa_aaaa_aaaa_aaaa, 0x8000_0000_0000_0000] {
        for mode in [TagMode::Tag1, TagMode::Tag2, TagMode::Full] {
            let l = TagLayout::choose(mode, &provider(true, true, format)).unwrap();
            assert_eq!(l, layout(mode), "{format:#x}");
        }
    }
}

#[test]
fn mem_tag_format_16_reserved_bits() {
    let p = provider(true, true, 0x0000_ffff_ffff_ffff);
    let err = TagLayout::choose(TagMode::Tag1, &p).unwrap_err();
    for part in [
        "'testprov'",
        "mem_tag_format 0x0000ffffffffffff",
        "16 high-order",
        "ofi_tag_1",
        "ofi_tag_2 (8 context-id bits left)",
        "ofi_tag_full (14 context-id bits left)",
        "another provider",
    ] {
        assert!(err.contains(part), "{err}: no '{part}'");
    }
    let t2 = TagLayout::choose(TagMode::Tag2, &p).unwrap();
    assert_eq!(t2.max_context(), 255);
    assert_eq!(bits(t2.send_tag(1, 0, 0, Proto::Standard)), [40]);
    assert_eq!(bits(t2.send_tag(255, 0, 0, Proto::Standard)), span(40, 47));
    assert_eq!((t2.max_source(), t2.max_tag()), (Some(262_143), 524_287));
    let full = TagLayout::choose(TagMode::Full, &p).unwrap();
    assert_eq!(full.max_context(), (1 << 14) - 1);
    // Auto with both capabilities: full, shrunk; without: tag_1, refused.
    assert_eq!(TagLayout::choose(TagMode::Auto, &p).unwrap(), full);
    let err = TagLayout::choose(TagMode::Auto, &provider(false, true, 0x0000_ffff_ffff_ffff))
        .unwrap_err();
    assert!(err.contains("auto (which chose ofi_tag_1)"), "{err}");
    assert!(err.contains("ofi_tag_2 (8 context-id bits left)"), "{err}");
    assert!(
        !err.contains("ofi_tag_full ("),
        "{err}: full is not available"
    );
}

#[test]
fn mem_tag_format_shrinks_tag_1_down_to_8_bits() {
    let p = provider(false, false, 0x0fff_ffff_ffff_ffff);
    let t1 = TagLayout::choose(TagMode::Tag1, &p).unwrap();
    assert_eq!(t1.max_context(), 255);
    assert_eq!(bits(t1.send_tag(1, 0, 0, Proto::Standard)), [52]);
    assert_eq!(bits(t1.send_tag(255, 0, 0, Proto::Standard)), span(52, 59));
    assert_eq!(t1.max_source(), Some(262_143));
    assert_eq!(t1.max_tag(), i32::MAX);
    let t2 = TagLayout::choose(TagMode::Tag2, &p).unwrap();
    assert_eq!(t2.max_context(), (1 << 20) - 1);
    // One more reserved bit: 7 context bits, refused.
    let err = TagLayout::choose(
        TagMode::Tag1,
        &provider(false, false, 0x07ff_ffff_ffff_ffff),
    )
    .unwrap_err();
    assert!(err.contains("from 12 to 7 bits"), "{err}");
    assert!(err.contains("mem_tag_format 0x07ffffffffffffff"), "{err}");
}

#[test]
fn full_absorbs_two_reserved_bits_first() {
    let full = |format| TagLayout::choose(TagMode::Full, &provider(true, true, format));
    assert_eq!(
        full(0x7fff_ffff_ffff_ffff).unwrap().max_context(),
        268_435_455
    );
    assert_eq!(
        full(0x3fff_ffff_ffff_ffff).unwrap().max_context(),
        268_435_455
    );
    assert_eq!(
        full(0x1fff_ffff_ffff_ffff).unwrap().max_context(),
        134_217_727
    );
    assert_eq!(full(0x0000_03ff_ffff_ffff).unwrap().max_context(), 255);
    // tag_1 has no spare bits: 2 reserved bits cost it 2 context bits.
    let t1 = TagLayout::choose(TagMode::Tag1, &provider(true, true, 0x3fff_ffff_ffff_ffff));
    assert_eq!(t1.unwrap().max_context(), 1_023);
    // 23 reserved bits leave full 7; nothing else fits either.
    let err = full(0x0000_01ff_ffff_ffff).unwrap_err();
    assert!(err.contains("ofi_tag_full from 28 to 7 bits"), "{err}");
    assert!(err.contains("choose another provider"), "{err}");
    assert!(!err.contains("ofi_tag_2 ("), "{err}");
}

#[test]
fn tag_2_refusal_suggests_full_only_when_available() {
    let format = 0x0000_7fff_ffff_ffff; // 17 reserved bits
    let err = TagLayout::choose(TagMode::Tag2, &provider(true, true, format)).unwrap_err();
    assert!(err.contains("ofi_tag_2 from 24 to 7 bits"), "{err}");
    assert!(
        err.contains("ofi_tag_full (13 context-id bits left)"),
        "{err}"
    );
    let err = TagLayout::choose(TagMode::Tag2, &provider(true, false, format)).unwrap_err();
    assert!(!err.contains("ofi_tag_full"), "{err}");
    assert!(err.contains("choose another provider"), "{err}");
}

#[test]
fn sends_never_touch_reserved_bits() {
    for format in [
        0x0fff_ffff_ffff_ffff,
        0x3fff_ffff_ffff_ffff,
        0x1fff_ffff_ffff_ffff,
        0x0000_ffff_ffff_ffff,
    ] {
        for mode in [TagMode::Tag1, TagMode::Tag2, TagMode::Full] {
            let Ok(l) = TagLayout::choose(mode, &provider(true, true, format)) else {
                continue;
            };
            let max_source = l.max_source().unwrap_or(u32::MAX);
            for proto in PROTOS {
                for tag in [-1, l.min_tag(), l.max_tag()] {
                    let t = l.send_tag(l.max_context(), max_source, tag, proto);
                    assert_eq!(t & !format, 0, "{l}: {t:#x} vs {format:#x}");
                }
            }
        }
    }
}

#[test]
fn check_sentences() {
    let [t1, t2, full] = all_layouts();
    assert_eq!(t1.check(4_095, 262_143, i32::MAX), Ok(()));
    assert_eq!(t1.check(0, 0, i32::MIN), Ok(()));
    let err = t1.check(4_096, 0, 0).unwrap_err();
    for part in [
        "context id 4096",
        "largest context id is 4095",
        "12 bits",
        "ofi_tag_1",
    ] {
        assert!(err.contains(part), "{err}: no '{part}'");
    }
    let err = t1.check(0, 262_144, 0).unwrap_err();
    for part in [
        "source rank 262144",
        "largest source rank is 262143",
        "ofi_tag_1",
    ] {
        assert!(err.contains(part), "{err}: no '{part}'");
    }
    // The first field out of range is named.
    assert!(t1
        .check(5_000, 300_000, 0)
        .unwrap_err()
        .contains("context id 5000"));
    assert_eq!(t2.check(16_777_215, 262_143, -500_000), Ok(()));
    let err = t2.check(0, 0, 524_288).unwrap_err();
    for part in [
        "tag 524288",
        "largest tag is 524287",
        "20 bits",
        "ofi_tag_2",
    ] {
        assert!(err.contains(part), "{err}: no '{part}'");
    }
    let err = t2.check(0, 0, -524_289).unwrap_err();
    for part in ["tag -524289", "smallest tag is -524288", "ofi_tag_2"] {
        assert!(err.contains(part), "{err}: no '{part}'");
    }
    assert!(t2.check(16_777_216, 0, 0).unwrap_err().contains("16777215"));
    assert_eq!(full.check(268_435_455, u32::MAX, i32::MIN), Ok(()));
    let err = full.check(268_435_456, 0, 0).unwrap_err();
    for part in [
        "context id 268435456",
        "268435455",
        "28 bits",
        "ofi_tag_full",
    ] {
        assert!(err.contains(part), "{err}: no '{part}'");
    }
    let shrunk = TagLayout::choose(
        TagMode::Tag1,
        &provider(false, false, 0x0fff_ffff_ffff_ffff),
    )
    .unwrap();
    let err = shrunk.check(256, 0, 0).unwrap_err();
    for part in [
        "context id 256",
        "largest context id is 255",
        "8 bits",
        "reserving 4",
    ] {
        assert!(err.contains(part), "{err}: no '{part}'");
    }
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "context id 4096 does not fit")]
fn send_tag_asserts_the_limits_in_debug_builds() {
    layout(TagMode::Tag1).send_tag(4_096, 0, 0, Proto::Standard);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "tag 524288 does not fit")]
fn ack_match_asserts_the_limits_in_debug_builds() {
    layout(TagMode::Tag2).ack_match(0, 0, 524_288);
}

#[test]
fn tag_mode_parsing() {
    for (text, mode) in [
        ("auto", TagMode::Auto),
        ("ofi_tag_1", TagMode::Tag1),
        ("ofi_tag_2", TagMode::Tag2),
        ("ofi_tag_full", TagMode::Full),
    ] {
        assert_eq!(text.parse::<TagMode>(), Ok(mode));
        assert_eq!(mode.to_string(), text);
    }
    assert_eq!(TagMode::default(), TagMode::Auto);
    for bad in ["ofi_tag_3", "", "OFI_TAG_1", " auto", "full"] {
        let err = bad.parse::<TagMode>().unwrap_err();
        assert!(err.contains(&format!("'{bad}'")), "{err}");
        for name in ["auto", "ofi_tag_1", "ofi_tag_2", "ofi_tag_full"] {
            assert!(err.contains(name), "{err}: no '{name}'");
        }
    }
}

#[test]
fn display_for_verbose_logs() {
    let [t1, t2, full] = all_layouts();
    assert_eq!(
        t1.to_string(),
        "ofi_tag_1: context id 12 bits (max 4095), source 18 bits (max 262143), \
         tag 32 bits (max 2147483647)"
    );
    assert_eq!(
        t2.to_string(),
        "ofi_tag_2: context id 24 bits (max 16777215), source 18 bits (max 262143), \
         tag 20 bits (max 524287)"
    );
    assert_eq!(
        full.to_string(),
        "ofi_tag_full: context id 28 bits (max 268435455), source in remote CQ data \
         (32 bits), tag 32 bits (max 2147483647)"
    );
    let shrunk = TagLayout::choose(
        TagMode::Tag2,
        &provider(false, false, 0x0000_ffff_ffff_ffff),
    )
    .unwrap();
    assert_eq!(
        shrunk.to_string(),
        "ofi_tag_2: context id 8 bits (max 255), source 18 bits (max 262143), \
         tag 20 bits (max 524287); provider reserves 16 high-order bits"
    );
}

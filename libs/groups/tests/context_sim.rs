//! Context-id agreement among simulated processes: one `ContextIds` per
//! process, a fake allreduce (BAND over each creation's members), and
//! concurrent creations (threads of one process) interleaved step by step.
//!
//! Scripted interleavings show that the serialized protocol breaks under
//! concurrency, that the retry protocol repairs the same interleaving, and
//! that without priorities the retry protocol can repeat for ever; random
//! schedules check that the retry protocol with priorities always ends,
//! gives every member of a communicator the same id, and never gives two
//! communicators of one process the same id.

use std::collections::{BTreeSet, HashMap};

use oxmpi_groups::{ContextError, ContextIds, Reservation, MASK_SETTLED};
use proptest::prelude::*;

fn and(masks: &[Vec<u64>]) -> Vec<u64> {
    let mut out = masks[0].clone();
    for m in &masks[1..] {
        for (o, w) in out.iter_mut().zip(m) {
            *o &= w;
        }
    }
    out
}

#[test]
fn the_serialized_protocol_breaks_under_concurrency() {
    // Processes P0 and P1 each run creations A and B (over both) in two
    // threads; all four masks are taken before any claim.
    let mut p = [
        ContextIds::with_limit(64).unwrap(),
        ContextIds::with_limit(64).unwrap(),
    ];
    let a = and(&[p[0].free_mask(), p[1].free_mask()]);
    let b = and(&[p[0].free_mask(), p[1].free_mask()]);
    let id_a = ContextIds::lowest_common(&a).unwrap();
    let id_b = ContextIds::lowest_common(&b).unwrap();
    assert_eq!((id_a, id_b), (2, 2));
    // P0 claims for A first, P1 for B first.
    assert_eq!(p[0].claim(id_a), Ok(()));
    assert_eq!(p[0].claim(id_b), Err(ContextError::InUse { id: 2 }));
    assert_eq!(p[1].claim(id_b), Ok(()));
    assert_eq!(p[1].claim(id_a), Err(ContextError::InUse { id: 2 }));
    // A got id 2 at P0 but failed at P1: its members disagree.
}

/// One round of the retry protocol for creations A and B over P0 and P1,
/// with the masks taken by `mask(process, creation)` in the order A@P0,
/// B@P0, B@P1, A@P1, and the reservations made in the order A@P0, B@P0,
/// B@P1, A@P1 (each process serves a different creation first). Returns
/// the reservations `[creation][process]` and the votes.
fn symmetric_round(
    p: &mut [ContextIds; 2],
    mask: impl Fn(&ContextIds, usize) -> Vec<u64>,
) -> ([[Reservation; 2]; 2], [bool; 2]) {
    let a = and(&[mask(&p[0], 0), mask(&p[1], 0)]);
    let b = and(&[mask(&p[0], 1), mask(&p[1], 1)]);
    let a0 = p[0].reserve_tentative(&a).unwrap();
    let b0 = p[0].reserve_tentative(&b).unwrap();
    let b1 = p[1].reserve_tentative(&b).unwrap();
    let a1 = p[1].reserve_tentative(&a).unwrap();
    let res = [[a0, a1], [b0, b1]];
    let votes = res.map(|r| r.iter().all(|x| x.vote() == Some(true)));
    for (c, r) in res.iter().enumerate() {
        for (proc, x) in r.iter().enumerate() {
            if let Reservation::Reserved(id) = *x {
                if votes[c] {
                    p[proc].confirm(id).unwrap();
                } else {
                    p[proc].abandon(id).unwrap();
                }
            }
        }
    }
    (res, votes)
}

#[test]
fn without_priorities_the_retry_protocol_can_repeat_for_ever() {
    use Reservation::{Busy, Reserved};
    let mut p = [
        ContextIds::with_limit(64).unwrap(),
        ContextIds::with_limit(64).unwrap(),
    ];
    for _ in 0..100 {
        let (res, votes) = symmetric_round(&mut p, |ids, _| ids.free_mask());
        assert_eq!(res, [[Reserved(2), Busy(2)], [Busy(2), Reserved(2)]]);
        assert_eq!(votes, [false, false]);
        // Safe (no one kept the id), but back where it started.
        assert!(!p[0].in_use(2) && !p[1].in_use(2));
    }
}

#[test]
fn the_retry_protocol_with_priorities_resolves_the_same_interleaving() {
    use Reservation::{Busy, Contended, Reserved};
    let mut p = [
        ContextIds::with_limit(64).unwrap(),
        ContextIds::with_limit(64).unwrap(),
    ];
    // Round 1: each creation took its masks before the other began, so
    // both contribute their free ids and collide exactly as above.
    let (res, votes) = symmetric_round(&mut p, |ids, _| ids.free_mask());
    assert_eq!(res, [[Reserved(2), Busy(2)], [Busy(2), Reserved(2)]]);
    assert_eq!(votes, [false, false]);
    // Both have begun now; A's parent context id (3) is below B's (5).
    for ids in &mut p {
        ids.begin_creation(3).unwrap();
        ids.begin_creation(5).unwrap();
    }
    let prio = [3, 5];
    // Round 2: B yields everywhere, A alone reserves 2.
    let (res, votes) = symmetric_round(&mut p, |ids, c| ids.round_mask(prio[c]).unwrap());
    assert_eq!(res, [[Reserved(2), Reserved(2)], [Contended, Contended]]);
    assert_eq!(votes, [true, false]);
    for ids in &mut p {
        ids.end_creation(3).unwrap();
    }
    // Round 3: B, alone now, gets 3.
    let b = and(&[p[0].round_mask(5).unwrap(), p[1].round_mask(5).unwrap()]);
    for ids in &mut p {
        assert_eq!(ids.reserve_tentative(&b), Ok(Reserved(3)));
        ids.confirm(3).unwrap();
        ids.end_creation(5).unwrap();
        assert!(ids.in_use(2) && ids.in_use(3));
    }
}

#[test]
fn a_last_id_held_tentatively_is_not_exhaustion() {
    use Reservation::{Contended, Exhausted, Reserved};
    // One id (2) in the pool. X (priority 5) has taken its masks at P0 and
    // P1 and reserved 2 at P0 when Y (priority 3) begins at both.
    let mut p = [
        ContextIds::with_limit(3).unwrap(),
        ContextIds::with_limit(3).unwrap(),
    ];
    for ids in &mut p {
        ids.begin_creation(5).unwrap();
    }
    let x = and(&[p[0].round_mask(5).unwrap(), p[1].round_mask(5).unwrap()]);
    assert_eq!(p[0].reserve_tentative(&x), Ok(Reserved(2)));
    for ids in &mut p {
        ids.begin_creation(3).unwrap();
    }
    // Y owns the masks now; 2 is free at P1 but tentative at P0.
    let y = and(&[p[0].round_mask(3).unwrap(), p[1].round_mask(3).unwrap()]);
    assert_eq!(ContextIds::lowest_common(&y), None);
    // X might still abandon 2, so Y must look again, not give up.
    assert_eq!(p[0].reserve_tentative(&y), Ok(Contended));
    assert_eq!(p[1].reserve_tentative(&y), Ok(Contended));
    // X completes its round: reserved at P1 too, the vote passes.
    assert_eq!(p[1].reserve_tentative(&x), Ok(Reserved(2)));
    for ids in &mut p {
        ids.confirm(2).unwrap();
        ids.end_creation(5).unwrap();
    }
    // Now the pool is really empty, and every member of Y sees it.
    let y = and(&[p[0].round_mask(3).unwrap(), p[1].round_mask(3).unwrap()]);
    for ids in &mut p {
        assert_eq!(ids.reserve_tentative(&y), Ok(Exhausted));
        ids.end_creation(3).unwrap();
    }
}

/// Where one member (a thread of one process) is in one creation.
#[derive(Clone, Debug)]
enum Phase {
    Begin,
    Mask,
    AwaitMask(usize),
    Reserve(Vec<u64>),
    AwaitVote(usize, Reservation),
    Settle(bool, Reservation),
    Done(Outcome),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Id(u32),
    Exhausted,
}

struct Agent {
    creation: usize,
    /// Index of the process in the creation's member list.
    slot: usize,
    proc: usize,
    /// The next collective's sequence number.
    seq: usize,
    /// The sequence number of the last mask collective.
    mask_seq: usize,
    phase: Phase,
}

#[derive(Default, Debug)]
struct Stats {
    busy: usize,
    contended: usize,
    rounds: usize,
}

struct Sim {
    procs: Vec<ContextIds>,
    members: Vec<Vec<usize>>,
    priority: Vec<u64>,
    agents: Vec<Agent>,
    /// Contributions to collective `(creation, seq)`, by member slot.
    pending: HashMap<(usize, usize), Vec<Option<Vec<u64>>>>,
    /// For a mask collective: the ids free or tentatively reserved at each
    /// member when it took its mask (the ids that might still be had).
    potential: HashMap<(usize, usize), Vec<BTreeSet<u32>>>,
    stats: Stats,
}

impl Sim {
    fn new(procs: Vec<ContextIds>, members: Vec<Vec<usize>>, priority: Vec<u64>) -> Sim {
        let mut agents = Vec::new();
        for (creation, m) in members.iter().enumerate() {
            for (slot, &proc) in m.iter().enumerate() {
                agents.push(Agent {
                    creation,
                    slot,
                    proc,
                    seq: 0,
                    mask_seq: 0,
                    phase: Phase::Begin,
                });
            }
        }
        Sim {
            procs,
            members,
            priority,
            agents,
            pending: HashMap::new(),
            potential: HashMap::new(),
            stats: Stats::default(),
        }
    }

    fn contribute(&mut self, a: usize, value: Vec<u64>) -> usize {
        let (c, slot, seq) = (
            self.agents[a].creation,
            self.agents[a].slot,
            self.agents[a].seq,
        );
        let n = self.members[c].len();
        let entry = self
            .pending
            .entry((c, seq))
            .or_insert_with(|| vec![None; n]);
        assert!(entry[slot].is_none(), "two contributions to one collective");
        entry[slot] = Some(value);
        self.agents[a].seq += 1;
        seq
    }

    /// The allreduce result, once every member contributed.
    fn result(&self, c: usize, seq: usize) -> Option<Vec<u64>> {
        let all = self.pending.get(&(c, seq))?;
        let masks: Option<Vec<Vec<u64>>> = all.iter().cloned().collect();
        masks.map(|m| and(&m))
    }

    fn runnable(&self, a: usize) -> bool {
        let agent = &self.agents[a];
        match agent.phase {
            Phase::Done(_) => false,
            Phase::AwaitMask(seq) | Phase::AwaitVote(seq, _) => {
                self.result(agent.creation, seq).is_some()
            }
            _ => true,
        }
    }

    /// Advances one agent by one call.
    fn step(&mut self, a: usize) {
        let (c, proc) = (self.agents[a].creation, self.agents[a].proc);
        let prio = self.priority[c];
        let phase = self.agents[a].phase.clone();
        let next = match phase {
            Phase::Begin => {
                self.procs[proc].begin_creation(prio).unwrap();
                Phase::Mask
            }
            Phase::Mask => {
                let ids = &self.procs[proc];
                let mask = ids.round_mask(prio).unwrap();
                let maybe: BTreeSet<u32> = (2..ids.limit())
                    .filter(|&id| !ids.in_use(id) || ids.is_tentative(id))
                    .collect();
                let n = self.members[c].len();
                let slot = self.agents[a].slot;
                let seq = self.contribute(a, mask);
                self.potential
                    .entry((c, seq))
                    .or_insert_with(|| vec![BTreeSet::new(); n])[slot] = maybe;
                Phase::AwaitMask(seq)
            }
            Phase::AwaitMask(seq) => {
                self.agents[a].mask_seq = seq;
                Phase::Reserve(self.result(c, seq).unwrap())
            }
            Phase::Reserve(anded) => {
                let r = self.procs[proc].reserve_tentative(&anded).unwrap();
                if self.agents[a].slot == 0 {
                    self.stats.rounds += 1;
                }
                match r {
                    Reservation::Exhausted => {
                        // No id could still be had at every member.
                        let sets = &self.potential[&(c, self.agents[a].mask_seq)];
                        let common =
                            (sets[0].iter()).find(|id| sets.iter().all(|s| s.contains(id)));
                        assert_eq!(
                            common, None,
                            "creation {c} exhausted while an id might be had"
                        );
                        self.procs[proc].end_creation(prio).unwrap();
                        Phase::Done(Outcome::Exhausted)
                    }
                    Reservation::Contended => {
                        self.stats.contended += 1;
                        Phase::Mask
                    }
                    Reservation::Reserved(_) | Reservation::Busy(_) => {
                        if matches!(r, Reservation::Busy(_)) {
                            self.stats.busy += 1;
                        }
                        let vote = u64::from(r.vote().unwrap());
                        Phase::AwaitVote(self.contribute(a, vec![vote]), r)
                    }
                }
            }
            Phase::AwaitVote(seq, r) => Phase::Settle(self.result(c, seq).unwrap()[0] == 1, r),
            Phase::Settle(all, r) => match (all, r) {
                (true, Reservation::Reserved(id)) => {
                    self.procs[proc].confirm(id).unwrap();
                    self.procs[proc].end_creation(prio).unwrap();
                    Phase::Done(Outcome::Id(id))
                }
                (false, Reservation::Reserved(id)) => {
                    self.procs[proc].abandon(id).unwrap();
                    Phase::Mask
                }
                (false, _) => Phase::Mask,
                (true, other) => panic!("a unanimous vote with {other:?}"),
            },
            Phase::Done(_) => unreachable!(),
        };
        self.agents[a].phase = next;
    }

    /// Runs to completion: `pick(runnable agents)` chooses each step.
    fn run(&mut self, mut pick: impl FnMut(&[usize]) -> usize, max_steps: usize) {
        for _ in 0..max_steps {
            let runnable: Vec<usize> = (0..self.agents.len())
                .filter(|&a| self.runnable(a))
                .collect();
            if runnable.is_empty() {
                assert!(
                    self.agents
                        .iter()
                        .all(|a| matches!(a.phase, Phase::Done(_))),
                    "deadlock: {:?}",
                    self.agents.iter().map(|a| &a.phase).collect::<Vec<_>>()
                );
                return;
            }
            let a = runnable[pick(&runnable) % runnable.len()];
            self.step(a);
        }
        panic!("no agreement after {max_steps} steps: {:?}", self.stats);
    }

    /// The agreement and uniqueness properties, once every agent is done.
    fn check(&self, preclaimed: &[BTreeSet<u32>]) {
        let mut per_proc: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); self.procs.len()];
        for c in 0..self.members.len() {
            let outcomes: Vec<(usize, Outcome)> = (self.agents.iter())
                .filter(|a| a.creation == c)
                .map(|a| match a.phase {
                    Phase::Done(o) => (a.proc, o),
                    ref p => panic!("creation {c} unfinished: {p:?}"),
                })
                .collect();
            // Every member has the same outcome.
            assert!(
                outcomes.iter().all(|o| o.1 == outcomes[0].1),
                "creation {c}: {outcomes:?}"
            );
            match outcomes[0].1 {
                Outcome::Id(id) => {
                    for &(proc, _) in &outcomes {
                        assert!(
                            per_proc[proc].insert(id),
                            "process {proc} has id {id} twice"
                        );
                        assert!(!preclaimed[proc].contains(&id));
                        assert!(self.procs[proc].in_use(id) && !self.procs[proc].is_tentative(id));
                    }
                }
                Outcome::Exhausted => {
                    // Genuinely: no id is free at every member even now.
                    let masks: Vec<Vec<u64>> = outcomes
                        .iter()
                        .map(|&(p, _)| self.procs[p].free_mask())
                        .collect();
                    assert_eq!(
                        ContextIds::lowest_common(&and(&masks)),
                        None,
                        "creation {c} exhausted spuriously"
                    );
                }
            }
        }
        for (proc, ids) in self.procs.iter().enumerate() {
            assert_ne!(
                ids.free_mask()[0] & MASK_SETTLED,
                0,
                "process {proc} kept a tentative id"
            );
            let expected = ids.limit() - 2 - (preclaimed[proc].len() + per_proc[proc].len()) as u32;
            assert_eq!(ids.available(), expected, "process {proc} leaked ids");
            for p in 0..self.priority.len() {
                assert!(
                    ids.round_mask(self.priority[p]).is_err(),
                    "creation {p} still registered"
                );
            }
        }
    }
}

/// A small xorshift generator, so the long runs need no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as usize
    }
}

#[test]
fn many_overlapping_creations_under_random_schedules() {
    let mut totals = Stats::default();
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let nprocs = 2 + rng.next() % 5;
        let ncreations = 2 + rng.next() % 7;
        let mut members = Vec::new();
        for _ in 0..ncreations {
            let mut m: Vec<usize> = (0..nprocs).filter(|_| rng.next() % 3 < 2).collect();
            if m.len() < 2 {
                m = vec![0, 1];
            }
            members.push(m);
        }
        let mut priority: Vec<u64> = (0..ncreations as u64).map(|p| p * 7 + 2).collect();
        for i in (1..priority.len()).rev() {
            priority.swap(i, rng.next() % (i + 1));
        }
        let limit = [12, 70, 200][rng.next() % 3];
        let mut procs = Vec::new();
        let mut preclaimed = Vec::new();
        for _ in 0..nprocs {
            let mut ids = ContextIds::with_limit(limit).unwrap();
            let mut taken = BTreeSet::new();
            for _ in 0..rng.next() % 6 {
                let id = 2 + (rng.next() % 10) as u32;
                if ids.claim(id).is_ok() {
                    taken.insert(id);
                }
            }
            procs.push(ids);
            preclaimed.push(taken);
        }
        let mut sim = Sim::new(procs, members, priority);
        sim.run(|_| rng.next(), 1_000_000);
        sim.check(&preclaimed);
        totals.busy += sim.stats.busy;
        totals.contended += sim.stats.contended;
        totals.rounds += sim.stats.rounds;
    }
    // The schedules did exercise the conflict paths.
    assert!(totals.busy > 0 && totals.contended > 0, "{totals:?}");
}

#[test]
fn a_pool_too_small_for_everyone_fails_everywhere_alike() {
    // Ids 2..6 (4 of them) for 5 creations over the same 3 processes:
    // exactly one creation fails, at all three processes, whatever the
    // schedule. Failing one more (while an id was only tentatively held
    // by another creation) would leave an id unused.
    let mut exhausted_total = 0;
    for seed in 1..=300u64 {
        let procs = (0..3).map(|_| ContextIds::with_limit(6).unwrap()).collect();
        let members = vec![vec![0, 1, 2]; 5];
        let mut sim = Sim::new(procs, members, (10..15).collect());
        let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
        sim.run(|_| rng.next(), 1_000_000);
        sim.check(&[BTreeSet::new(), BTreeSet::new(), BTreeSet::new()]);
        let exhausted = (sim.agents.iter())
            .filter(|a| matches!(a.phase, Phase::Done(Outcome::Exhausted)))
            .count();
        assert_eq!(exhausted, 3, "seed {seed}");
        assert!(sim.procs.iter().all(|p| p.available() == 0));
        exhausted_total += exhausted;
    }
    assert_eq!(exhausted_total, 3 * 300);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Adversarial schedules chosen by proptest (then round robin).
    #[test]
    fn chosen_schedules_agree(
        nprocs in 2..5usize,
        shapes in proptest::collection::vec((any::<u8>(), any::<u16>()), 1..6),
        choices in proptest::collection::vec(any::<usize>(), 0..600),
    ) {
        let members: Vec<Vec<usize>> = shapes.iter().map(|&(bits, _)| {
            let m: Vec<usize> = (0..nprocs).filter(|&p| bits >> p & 1 == 1).collect();
            if m.is_empty() { vec![0] } else { m }
        }).collect();
        // Distinct priorities, in the order drawn.
        let priority: Vec<u64> = (shapes.iter().enumerate())
            .map(|(i, &(_, p))| u64::from(p) * 16 + i as u64)
            .collect();
        let procs = (0..nprocs).map(|_| ContextIds::with_limit(9).unwrap()).collect();
        let mut sim = Sim::new(procs, members, priority);
        let mut i = 0;
        let mut rr = 0;
        sim.run(|runnable| {
            i += 1;
            if let Some(&c) = choices.get(i - 1) {
                c
            } else {
                rr += 1;
                rr % runnable.len()
            }
        }, 1_000_000);
        sim.check(&vec![BTreeSet::new(); nprocs]);
    }
}

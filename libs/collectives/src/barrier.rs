//! `MPI_Barrier`: no rank leaves before every rank has entered. All
//! messages are empty.

use crate::buffers::check_comm;
use crate::error::CollError;
use crate::topo::{prev_power_of_two, ring_add, ring_sub};
use crate::transport::{exchange, recv, send, sendrecv, Transport};

/// Barrier by fan-in to rank 0 and fan-out from it: every other rank sends
/// rank 0 an empty message and waits for its answer; rank 0 answers once
/// it has heard from everyone. `2(n−1)` messages, all through rank 0.
///
/// Any size.
///
/// # Errors
///
/// The transport's.
pub async fn barrier_linear<T: Transport + ?Sized>(t: &mut T, tag: i32) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    if rank == 0 {
        let mut recvs: Vec<(u32, &mut [u8])> =
            (1..size).map(|r| (r, <&mut [u8]>::default())).collect();
        exchange(t, tag, &[], &mut recvs).await?;
        let sends: Vec<(u32, &[u8])> = (1..size).map(|r| (r, &[][..])).collect();
        exchange(t, tag, &sends, &mut []).await
    } else {
        send(t, 0, tag, &[]).await?;
        recv(t, 0, tag, &mut []).await
    }
}

/// Barrier by recursive doubling: in round `k` each rank exchanges an empty
/// message with the rank whose number differs in bit `k`. For a size that
/// is not a power of two, the ranks above the largest power of two `p`
/// first report to rank `r − p`, which takes part for both and releases
/// them at the end. `⌈log2 n⌉` rounds (plus 2 for the extra ranks).
///
/// Any size.
///
/// # Errors
///
/// The transport's.
pub async fn barrier_recursive_doubling<T: Transport + ?Sized>(
    t: &mut T,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let p2 = prev_power_of_two(size);
    if rank >= p2 {
        send(t, rank - p2, tag, &[]).await?;
        return recv(t, rank - p2, tag, &mut []).await;
    }
    let extra = u64::from(rank) + u64::from(p2) < u64::from(size);
    if extra {
        recv(t, rank + p2, tag, &mut []).await?;
    }
    let mut mask = 1;
    while mask < p2 {
        let peer = rank ^ mask;
        sendrecv(t, peer, &[], peer, &mut [], tag).await?;
        mask <<= 1;
    }
    if extra {
        send(t, rank + p2, tag, &[]).await?;
    }
    Ok(())
}

/// Dissemination barrier: in round `k` (distance `d = 2^k`) each rank
/// sends an empty message to `r + d` and receives one from `r − d`
/// (modulo the size). After `⌈log2 n⌉` rounds every rank has heard,
/// directly or not, from every other.
///
/// Any size.
///
/// # Errors
///
/// The transport's.
pub async fn barrier_dissemination<T: Transport + ?Sized>(
    t: &mut T,
    tag: i32,
) -> Result<(), CollError> {
    dissemination(t, tag, true).await
}

/// Bruck's barrier: the dissemination barrier with the pairing mirrored —
/// in round `k` each rank sends to `r − 2^k` and receives from `r + 2^k`.
/// The rounds, the message count (`n⌈log2 n⌉`) and the guarantee are those
/// of [`barrier_dissemination`]; only the direction around the ring
/// differs (it is Bruck's concatenation pattern with empty blocks).
///
/// Any size.
///
/// # Errors
///
/// The transport's.
pub async fn barrier_bruck<T: Transport + ?Sized>(t: &mut T, tag: i32) -> Result<(), CollError> {
    dissemination(t, tag, false).await
}

async fn dissemination<T: Transport + ?Sized>(
    t: &mut T,
    tag: i32,
    upward: bool,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let mut dist = 1u64;
    while dist < u64::from(size) {
        let up = ring_add(rank, dist, size);
        let down = ring_sub(rank, dist, size);
        let (to, from) = if upward { (up, down) } else { (down, up) };
        sendrecv(t, to, &[], from, &mut [], tag).await?;
        dist <<= 1;
    }
    Ok(())
}

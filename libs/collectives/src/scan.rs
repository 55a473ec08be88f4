//! `MPI_Scan` and `MPI_Exscan`: prefix reductions in rank order.
//!
//! `send` is this rank's input and `recv` (the same length) its result.
//! `SendBuf::InPlace` (`MPI_IN_PLACE`, allowed at every rank): the input is
//! taken from `recv`, which the result overwrites.

use crate::allreduce::place_input;
use crate::buffers::{check_comm, SendBuf};
use crate::error::{invalid, CollError};
use crate::reduction::Reduction;
use crate::transport::{recv, send, Transport};

/// Inclusive scan along a chain: rank `r` receives the prefix
/// `x0 op … op x(r−1)` from `r − 1`, folds in its own input as the right
/// operand, keeps the result and sends it to `r + 1`. `n − 1` sequential
/// steps.
///
/// Any size and count; correct for non-commutative operations.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (buffers of different lengths or not
/// whole elements), [`CollError::Reduce`] for an operation that does not
/// apply to its type, the user operation's and the transport's.
pub async fn scan_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    place_input(t, send_buf, recv_buf, op)?;
    let (rank, size) = (t.rank(), t.size());
    if rank > 0 {
        let mut prefix = vec![0u8; recv_buf.len()];
        recv(t, rank - 1, tag, &mut prefix).await?;
        op.combine(&prefix, recv_buf)?;
    }
    if rank + 1 < size {
        send(t, rank + 1, tag, recv_buf).await?;
    }
    Ok(())
}

/// Exclusive scan along a chain: rank `r > 0` receives
/// `x0 op … op x(r−1)` from `r − 1` as its result, and passes that prefix
/// with its own input folded in as the right operand to `r + 1` (rank 0
/// passes its input). The result at rank 0 is undefined in MPI: its
/// `recv` is left untouched. `n − 1` sequential steps.
///
/// Any size and count; correct for non-commutative operations.
///
/// # Errors
///
/// As [`scan_linear`].
pub async fn exscan_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let mut own = match send_buf {
        SendBuf::Buf(input) if input.len() == recv_buf.len() => input.to_vec(),
        SendBuf::Buf(input) => {
            return invalid(format!(
                "the send buffer has {} bytes but the receive buffer {}",
                input.len(),
                recv_buf.len()
            ))
        }
        SendBuf::InPlace => recv_buf.to_vec(),
    };
    op.count_of(own.len(), "send buffer")?;
    if rank > 0 {
        recv(t, rank - 1, tag, recv_buf).await?;
        if rank + 1 < size {
            // own = prefix op own
            op.combine(recv_buf, &mut own)?;
        }
    }
    if rank + 1 < size {
        send(t, rank + 1, tag, &own).await?;
    }
    Ok(())
}

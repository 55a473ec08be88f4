//! The point-to-point transport the algorithms run over, and the safe
//! helpers every algorithm uses instead of the raw nonblocking calls.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::error::CollError;

/// A pending nonblocking operation of a [`Transport`], an opaque handle the
/// transport chooses. It is completed (and forgotten) by
/// [`Transport::wait_all`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Request(pub u64);

/// Point-to-point messages between the ranks `0..size()` of one
/// communicator: what a collective algorithm needs from the pml (or from
/// the in-memory test transport, [`crate::testkit`]).
///
/// # Contract
///
/// - **Matching.** A receive matches a message with exactly its source and
///   tag (no wildcards are used). Tags are chosen by the caller of the
///   collective: negative tags are internal traffic that never matches an
///   application receive (`MPI_ANY_TAG` excludes them).
/// - **Non-overtaking order.** Messages from one rank to another with the
///   same tag match the receives of that pair and tag in the order they
///   were started, and receives are matched in the order they were posted
///   (MPI's rule). Every algorithm relies on it: all messages of one call
///   use the one tag the caller gave, and two messages between the same
///   pair are told apart only by their order.
/// - **Progress.** A started operation must make progress while this rank
///   waits for any request (a receive posted earlier matches a message
///   even while the rank waits for an unrelated send), and sends may
///   complete only once matched (synchronous/rendezvous) or earlier
///   (buffered/eager): the algorithms are correct under both.
/// - **Buffers.** A buffer given to [`isend`](Transport::isend) or
///   [`irecv`](Transport::irecv) belongs to the transport until
///   [`wait_all`](Transport::wait_all) has returned for its request —
///   returned with success **or with an error**: when `wait_all` returns,
///   the transport does not touch the buffers of the requests it was given
///   any more. The safe helpers ([`send`], [`recv`], [`sendrecv`],
///   [`exchange`]) rely on this.
/// - **Lengths.** A receive of `len` bytes that matches a message of
///   another length completes with [`CollError::Length`] (every collective
///   knows its message sizes, so this is a disagreement between ranks).
///   Zero-length messages are messages like any other.
pub trait Transport {
    /// This rank in the communicator, `0..size()`.
    fn rank(&self) -> u32;

    /// The number of ranks in the communicator (at least 1).
    fn size(&self) -> u32;

    /// Starts sending `len` bytes at `buf` to rank `dest` with `tag`.
    ///
    /// # Safety
    ///
    /// `buf` is readable for `len` bytes, and not written by anyone, until
    /// [`wait_all`](Transport::wait_all) has returned for the request.
    ///
    /// # Errors
    ///
    /// The transport's own failures (e.g. `dest` out of range); then no
    /// request was started.
    unsafe fn isend(
        &mut self,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    ) -> Result<Request, CollError>;

    /// Starts receiving exactly `len` bytes from rank `source` with `tag`
    /// into `buf`.
    ///
    /// # Safety
    ///
    /// `buf` is writable for `len` bytes and neither read nor written by
    /// anyone else until [`wait_all`](Transport::wait_all) has returned for
    /// the request.
    ///
    /// # Errors
    ///
    /// The transport's own failures; then no request was started.
    unsafe fn irecv(
        &mut self,
        source: u32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<Request, CollError>;

    /// Waits until every request of `reqs` is complete and empties `reqs`.
    ///
    /// # Errors
    ///
    /// The first failure among the requests (a receive whose message had
    /// another length is [`CollError::Length`]). Even then every request
    /// is complete when this returns: none of their buffers is touched
    /// afterwards.
    fn wait_all(&mut self, reqs: &mut Vec<Request>) -> Result<(), CollError>;

    /// Whether the algorithms may block in [`wait_all`](Transport::wait_all)
    /// (a blocking collective, the default) or must only poll with
    /// [`test_all`](Transport::test_all) and give control back while
    /// messages are in flight (a non-blocking collective, driven by
    /// polling its future). Default: `true`.
    fn blocking(&self) -> bool {
        true
    }

    /// Checks `reqs` once without blocking: removes the requests that are
    /// complete and answers whether none is left. Default: waits for all
    /// of them ([`wait_all`](Transport::wait_all)), which is right for a
    /// transport that is only used blocking.
    ///
    /// # Errors
    ///
    /// The first failure among the completed requests. Then every request
    /// of `reqs` is complete (the transport waits for the others) and
    /// `reqs` is empty, as after a failed `wait_all`.
    fn test_all(&mut self, reqs: &mut Vec<Request>) -> Result<bool, CollError> {
        self.wait_all(reqs).map(|()| true)
    }

    /// A buffer of exactly `len` bytes for an algorithm's intermediate
    /// data; its contents are unspecified (the algorithm writes before it
    /// reads). A transport that keeps buffers between calls
    /// ([`recycle`](Transport::recycle)) spares the algorithms an
    /// allocation (and fresh pages) per call. Default: a new zeroed `Vec`.
    fn scratch(&mut self, len: usize) -> Vec<u8> {
        vec![0; len]
    }

    /// Gives back a buffer [`scratch`](Transport::scratch) handed out.
    /// Default: drops it.
    fn recycle(&mut self, buf: Vec<u8>) {
        drop(buf);
    }
}

/// Requests started by one helper call; waits for them when dropped, so an
/// early return (`?`) or a panic cannot leave a request running on a buffer
/// whose borrow has ended.
struct Pending<'t, T: Transport + ?Sized> {
    transport: &'t mut T,
    reqs: Vec<Request>,
}

impl<T: Transport + ?Sized> Pending<'_, T> {
    /// Waits for every request: blocks in `wait_all` on a blocking
    /// transport; polls with `test_all` on a non-blocking one, yielding to
    /// the future's driver between polls.
    async fn wait(&mut self) -> Result<(), CollError> {
        if self.transport.blocking() {
            let result = self.transport.wait_all(&mut self.reqs);
            // Complete even on error (the trait's contract), so nothing is
            // left to wait for in `drop`.
            self.reqs.clear();
            return result;
        }
        loop {
            match self.transport.test_all(&mut self.reqs) {
                Ok(true) => return Ok(()),
                Ok(false) => YieldOnce(false).await,
                Err(e) => {
                    // Complete on error (the trait's contract).
                    self.reqs.clear();
                    return Err(e);
                }
            }
        }
    }
}

/// A future that is pending once (asking to be polled again), then ready:
/// where a non-blocking collective gives control back to its driver.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Runs an algorithm's future to its end on this thread: the driver of the
/// blocking collectives. Over a blocking transport the future never waits
/// for anything but the transport's `wait_all`, so it completes in its
/// first poll; a future that does give control back is polled again at
/// once (busy polling).
#[inline(always)]
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

impl<T: Transport + ?Sized> Drop for Pending<'_, T> {
    fn drop(&mut self) {
        if !self.reqs.is_empty() {
            // Only reached on an error or unwinding path; the first error
            // is the one already being returned.
            let _ = self.transport.wait_all(&mut self.reqs);
        }
    }
}

/// Posts a receive for each of `recvs` (in order), then starts a send for
/// each of `sends` (in order), all with `tag`, and waits for all of them.
/// Each entry is `(peer rank, buffer)`; receives expect exactly their
/// buffer's length.
///
/// Posting the receives first and waiting for everything at once is what
/// makes an exchange deadlock-free even when sends are synchronous. Two
/// receives from the same source in one call are matched in their order
/// in `recvs`.
///
/// # Errors
///
/// The transport's errors (the first one); every started operation is
/// complete when this returns.
pub async fn exchange<T: Transport + ?Sized>(
    transport: &mut T,
    tag: i32,
    sends: &[(u32, &[u8])],
    recvs: &mut [(u32, &mut [u8])],
) -> Result<(), CollError> {
    exchange_with(transport, tag, sends, recvs, || {}).await
}

/// [`exchange`] that runs `meanwhile` (local work on other buffers, such
/// as copying this rank's own block into place) once every message is
/// started and before waiting, so the work overlaps the transfers.
///
/// # Errors
///
/// As [`exchange`] (`meanwhile` does not run if a message cannot start).
pub async fn exchange_with<T: Transport + ?Sized>(
    transport: &mut T,
    tag: i32,
    sends: &[(u32, &[u8])],
    recvs: &mut [(u32, &mut [u8])],
    meanwhile: impl FnOnce(),
) -> Result<(), CollError> {
    let mut pending = Pending {
        transport,
        reqs: Vec::with_capacity(sends.len() + recvs.len()),
    };
    // The one place where buffers are lent to the transport. The borrows
    // of `sends` and `recvs` last for this whole call, and every request
    // started here is complete before it returns: `pending.wait()` below
    // on the normal path, `Pending::drop` on an early return or a panic
    // (and `wait_all` completes every request even when it fails).
    for (source, buf) in recvs.iter_mut() {
        // SAFETY: `buf` is an exclusive borrow for the whole call, so it is
        // writable for `buf.len()` bytes and nobody else touches it; the
        // request is waited before the call returns (see above).
        let req = unsafe {
            pending
                .transport
                .irecv(*source, tag, buf.as_mut_ptr(), buf.len())
        }?;
        pending.reqs.push(req);
    }
    for (dest, buf) in sends {
        // SAFETY: `buf` is a shared borrow for the whole call, so it is
        // readable and unchanged; the request is waited before the call
        // returns (see above).
        let req = unsafe { pending.transport.isend(*dest, tag, buf.as_ptr(), buf.len()) }?;
        pending.reqs.push(req);
    }
    meanwhile();
    pending.wait().await
}

/// Sends `buf` to `dest` with `tag` and waits until the send is complete.
///
/// # Errors
///
/// The transport's.
pub async fn send<T: Transport + ?Sized>(
    transport: &mut T,
    dest: u32,
    tag: i32,
    buf: &[u8],
) -> Result<(), CollError> {
    exchange(transport, tag, &[(dest, buf)], &mut []).await
}

/// Receives exactly `buf.len()` bytes from `source` with `tag`.
///
/// # Errors
///
/// The transport's; [`CollError::Length`] if the message had another
/// length.
pub async fn recv<T: Transport + ?Sized>(
    transport: &mut T,
    source: u32,
    tag: i32,
    buf: &mut [u8],
) -> Result<(), CollError> {
    exchange(transport, tag, &[], &mut [(source, buf)]).await
}

/// Sends `send_buf` to `dest` and receives `recv_buf.len()` bytes from
/// `source` at the same time (the receive is posted first), both with
/// `tag`, as `MPI_Sendrecv`.
///
/// # Errors
///
/// The transport's; [`CollError::Length`] if the message had another
/// length.
pub async fn sendrecv<T: Transport + ?Sized>(
    transport: &mut T,
    dest: u32,
    send_buf: &[u8],
    source: u32,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    exchange(
        transport,
        tag,
        &[(dest, send_buf)],
        &mut [(source, recv_buf)],
    )
    .await
}

//! `MPI_Type_create_darray`: one process's part of an n-dimensional
//! array distributed over a grid of processes.

use crate::datatype::{Combiner, Contents, Order};
use crate::subarray::{dimensions, fastest_first};
use crate::{Datatype, DatatypeError};

const NAME: &str = "MPI_Type_create_darray";

/// How one dimension is distributed over the processes of its grid
/// dimension; `None` in a block size stands for `MPI_DISTRIBUTE_DFLT_DARG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// `MPI_DISTRIBUTE_BLOCK` (code 0): process `p` holds indices
    /// `p·b .. (p+1)·b`; the default block is `⌈size / processes⌉`.
    Block(Option<usize>),
    /// `MPI_DISTRIBUTE_CYCLIC` (code 1): blocks of `b` indices dealt to
    /// the processes in turn; the default block is 1.
    Cyclic(Option<usize>),
    /// `MPI_DISTRIBUTE_NONE` (code 2): not distributed (its grid
    /// dimension has one process).
    None,
}

impl Distribution {
    /// The code [`Contents::integers`] holds for it.
    pub const fn code(self) -> isize {
        match self {
            Distribution::Block(_) => 0,
            Distribution::Cyclic(_) => 1,
            Distribution::None => 2,
        }
    }

    /// The block size argument as [`Contents::integers`] holds it (−1 for
    /// the default, `MPI_DISTRIBUTE_DFLT_DARG`).
    pub fn darg_code(self) -> isize {
        match self {
            Distribution::Block(Some(b)) | Distribution::Cyclic(Some(b)) => b as isize,
            _ => -1,
        }
    }
}

fn argument(why: String) -> DatatypeError {
    DatatypeError::Argument { name: NAME, why }
}

/// The `(start, length)` runs of indices of a dimension of `size`
/// indices that process `coord` of `procs` holds.
fn runs(
    d: usize,
    size: usize,
    dist: Distribution,
    procs: usize,
    coord: usize,
) -> Result<Vec<(usize, usize)>, DatatypeError> {
    match dist {
        Distribution::None => {
            if procs != 1 {
                return Err(argument(format!(
                    "dimension {d} is not distributed but psizes[{d}] is {procs}; give it 1"
                )));
            }
            Ok(vec![(0, size)])
        }
        Distribution::Block(b) => {
            let b = b.unwrap_or(size.div_ceil(procs));
            if b == 0 || b.saturating_mul(procs) < size {
                return Err(argument(format!(
                    "dimension {d}: blocks of {b} over {procs} processes do not cover its {size} \
                     indices; give a block of at least {} or the default",
                    size.div_ceil(procs)
                )));
            }
            let start = (coord * b).min(size);
            Ok(vec![(start, b.min(size - start))])
        }
        Distribution::Cyclic(b) => {
            let b = b.unwrap_or(1);
            if b == 0 {
                return Err(argument(format!(
                    "dimension {d}: a cyclic block of 0 indices"
                )));
            }
            let mut out = Vec::new();
            let mut start = coord * b;
            while start < size {
                out.push((start, b.min(size - start)));
                start += procs * b;
            }
            Ok(out)
        }
    }
}

impl Datatype {
    /// The part of a `gsizes` array of `old` elements, stored in `order`,
    /// that process `rank` of `size` holds when dimension `d` is
    /// distributed by `distribs[d]` over `psizes[d]` processes
    /// (`MPI_Type_create_darray`). The process grid is numbered in C
    /// order whatever the array's order. Its lower bound is 0 and its
    /// extent the whole array's.
    ///
    /// # Errors
    ///
    /// No dimension; arrays of different lengths; a rank outside the
    /// processes; a grid whose product is not `size`; a size below 1; a
    /// block that does not cover a dimension; a dimension not distributed
    /// over more than one process; a size or bound that overflows.
    #[allow(clippy::too_many_arguments)]
    pub fn darray(
        size: usize,
        rank: usize,
        gsizes: &[usize],
        distribs: &[Distribution],
        psizes: &[usize],
        order: Order,
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let n = gsizes.len();
        dimensions(
            NAME,
            ("gsizes", n),
            [("distribs", distribs.len()), ("psizes", psizes.len())],
        )?;
        if rank >= size {
            return Err(argument(format!("rank {rank} is not below size {size}")));
        }
        let grid = psizes.iter().try_fold(1usize, |a, &p| a.checked_mul(p));
        if grid != Some(size) || psizes.contains(&0) {
            return Err(argument(format!(
                "the process grid {psizes:?} holds {} processes, not size {size}",
                grid.map_or("too many".into(), |g| g.to_string())
            )));
        }
        if let Some(d) = gsizes.iter().position(|&g| g == 0) {
            return Err(argument(format!("gsizes[{d}] is 0; it must be 1 or more")));
        }
        // Grid coordinates, C order.
        let mut coords = vec![0; n];
        let mut r = rank;
        for d in (0..n).rev() {
            coords[d] = r % psizes[d];
            r /= psizes[d];
        }
        let dims = fastest_first(order, n);
        let overflow = || DatatypeError::Overflow {
            name: NAME,
            what: "extent",
        };
        let to_isize = |v: usize| isize::try_from(v).map_err(|_| overflow());
        // From the fastest dimension out: the held runs of a dimension
        // are copies of the type of the faster ones, one stride apart.
        let mut t = old.clone();
        let mut stride = old.extent();
        for &d in &dims {
            let held = runs(d, gsizes[d], distribs[d], psizes[d], coords[d])?;
            let cell = Datatype::resized(&t, 0, stride)?;
            let mut lens = Vec::with_capacity(held.len());
            let mut displs = Vec::with_capacity(held.len());
            for (start, len) in held {
                lens.push(to_isize(len)?);
                displs.push(to_isize(start)?.checked_mul(stride).ok_or_else(overflow)?);
            }
            t = Datatype::hindexed(&lens, &displs, &cell)?;
            stride = stride
                .checked_mul(to_isize(gsizes[d])?)
                .ok_or_else(overflow)?;
        }
        let whole = Datatype::resized(&t, 0, stride)?;
        let mut integers = vec![size as isize, rank as isize, n as isize];
        integers.extend(gsizes.iter().map(|&g| g as isize));
        integers.extend(distribs.iter().map(|d| d.code()));
        integers.extend(distribs.iter().map(|d| d.darg_code()));
        integers.extend(psizes.iter().map(|&p| p as isize));
        integers.push(order.code());
        let contents = Contents {
            integers,
            types: vec![old.clone()],
            ..Contents::default()
        };
        Ok(whole.relabel(Combiner::Darray, contents))
    }
}

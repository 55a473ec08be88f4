//! `MPI_Type_create_subarray`: a block of an n-dimensional array.

use crate::datatype::{Combiner, Contents, Order};
use crate::{Datatype, DatatypeError};

const NAME: &str = "MPI_Type_create_subarray";

fn argument(why: String) -> DatatypeError {
    DatatypeError::Argument { name: NAME, why }
}

/// Checks that an array type has a dimension and that each of `others`
/// has an entry per dimension (`first` names the array that counts
/// them).
pub(crate) fn dimensions(
    name: &'static str,
    (first, n): (&'static str, usize),
    others: [(&'static str, usize); 2],
) -> Result<(), DatatypeError> {
    if n == 0 {
        return Err(DatatypeError::Argument {
            name,
            why: format!("ndims is 0 ({first} is empty); give at least one dimension"),
        });
    }
    for (second, len) in others {
        if len != n {
            return Err(DatatypeError::LengthMismatch {
                name,
                first,
                first_len: n,
                second,
                second_len: len,
            });
        }
    }
    Ok(())
}

/// The dimensions of an `n`-dimensional array stored in `order`, from
/// the fastest-varying to the slowest.
pub(crate) fn fastest_first(order: Order, n: usize) -> Vec<usize> {
    match order {
        Order::C => (0..n).rev().collect(),
        Order::Fortran => (0..n).collect(),
    }
}

impl Datatype {
    /// The block `starts[d] .. starts[d] + subsizes[d]` of each dimension
    /// `d` of an array of `sizes[d]` elements of `old` per dimension,
    /// stored in `order` (`MPI_Type_create_subarray`). Its lower bound is
    /// 0 and its extent the whole array's, so consecutive elements are
    /// consecutive arrays.
    ///
    /// # Errors
    ///
    /// No dimension; arrays of different lengths; a size below 1, a
    /// subsize below 0 or above its size, a start outside
    /// `0 ..= size − subsize`; a size or bound that overflows.
    pub fn subarray(
        sizes: &[isize],
        subsizes: &[isize],
        starts: &[isize],
        order: Order,
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let n = sizes.len();
        dimensions(
            NAME,
            ("sizes", n),
            [("subsizes", subsizes.len()), ("starts", starts.len())],
        )?;
        for d in 0..n {
            let (size, sub, start) = (sizes[d], subsizes[d], starts[d]);
            if size < 1 {
                return Err(argument(format!(
                    "sizes[{d}] is {size}; it must be 1 or more"
                )));
            }
            if !(0..=size).contains(&sub) {
                return Err(argument(format!(
                    "subsizes[{d}] is {sub}; it must be between 0 and sizes[{d}] ({size})"
                )));
            }
            if !(0..=size - sub).contains(&start) {
                return Err(argument(format!(
                    "starts[{d}] is {start}; with subsizes[{d}] {sub} and sizes[{d}] {size} it \
                     must be between 0 and {}",
                    size - sub
                )));
            }
        }
        let dims = fastest_first(order, n);
        let overflow = || DatatypeError::Overflow {
            name: NAME,
            what: "extent",
        };
        let ext = old.extent();
        let mut t = Datatype::contiguous(subsizes[dims[0]], old)?;
        let mut stride = sizes[dims[0]].checked_mul(ext).ok_or_else(overflow)?;
        let mut disp = starts[dims[0]].checked_mul(ext).ok_or_else(overflow)?;
        for &d in &dims[1..] {
            t = Datatype::hvector(subsizes[d], 1, stride, &t)?;
            let offset = starts[d].checked_mul(stride).ok_or_else(overflow)?;
            disp = disp.checked_add(offset).ok_or_else(overflow)?;
            stride = stride.checked_mul(sizes[d]).ok_or_else(overflow)?;
        }
        let placed = Datatype::hindexed(&[1], &[disp], &t)?;
        let whole = Datatype::resized(&placed, 0, stride)?;
        let mut integers = vec![n as isize];
        integers.extend_from_slice(sizes);
        integers.extend_from_slice(subsizes);
        integers.extend_from_slice(starts);
        integers.push(order.code());
        let contents = Contents {
            integers,
            types: vec![old.clone()],
            ..Contents::default()
        };
        Ok(whole.relabel(Combiner::Subarray, contents))
    }
}

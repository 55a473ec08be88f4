//! external32: MPI's portable representation (big-endian, `long` in 4
//! bytes, `wchar_t` in 2), for `MPI_Pack_external` and its kin.

use crate::desc::{walk, Window};
use crate::pack::span;
use crate::{Datatype, DatatypeError, Primitive};

/// The one portable representation MPI names.
pub const EXTERNAL32: &str = "external32";

fn datarep(name: &'static str, rep: &str) -> Result<(), DatatypeError> {
    if rep == EXTERNAL32 {
        Ok(())
    } else {
        Err(DatatypeError::Datarep {
            name,
            datarep: rep.to_owned(),
        })
    }
}

/// Writes one value of `prim` (its memory bytes `native`) into `out` (its
/// external32 bytes).
fn to_external(
    name: &'static str,
    prim: Primitive,
    native: &[u8],
    out: &mut [u8],
) -> Result<(), DatatypeError> {
    let ext = prim.external32_size();
    if ext == prim.size() {
        for (n, o) in native
            .chunks_exact(prim.swap_unit())
            .zip(out.chunks_exact_mut(prim.swap_unit()))
        {
            o.copy_from_slice(n);
            if cfg!(target_endian = "little") {
                o.reverse();
            }
        }
        return Ok(());
    }
    // A narrower external form: `long`, `unsigned long`, `wchar_t`.
    let mut bytes = [0u8; 16];
    bytes[..native.len()].copy_from_slice(native);
    let value: i128 = match (prim.size(), prim.is_signed_integer()) {
        (8, true) => i128::from(i64::from_ne_bytes(
            bytes[..8].try_into().unwrap_or_default(),
        )),
        (8, false) => i128::from(u64::from_ne_bytes(
            bytes[..8].try_into().unwrap_or_default(),
        )),
        (4, true) => i128::from(i32::from_ne_bytes(
            bytes[..4].try_into().unwrap_or_default(),
        )),
        _ => i128::from(u32::from_ne_bytes(
            bytes[..4].try_into().unwrap_or_default(),
        )),
    };
    let bits = 8 * ext as u32;
    let fits = if prim.is_signed_integer() {
        (-(1i128 << (bits - 1))..(1i128 << (bits - 1))).contains(&value)
    } else {
        (0..(1i128 << bits)).contains(&value)
    };
    if !fits {
        return Err(DatatypeError::Conversion { name, prim, value });
    }
    out.copy_from_slice(&value.to_be_bytes()[16 - ext..]);
    Ok(())
}

/// Writes one value of `prim` from its external32 bytes `ext` into
/// `native` (its memory bytes), widening with the sign where the memory
/// form is wider.
fn from_external(prim: Primitive, ext: &[u8], native: &mut [u8]) {
    if ext.len() == prim.size() {
        for (e, n) in ext
            .chunks_exact(prim.swap_unit())
            .zip(native.chunks_exact_mut(prim.swap_unit()))
        {
            n.copy_from_slice(e);
            if cfg!(target_endian = "little") {
                n.reverse();
            }
        }
        return;
    }
    let mut be = [0u8; 16];
    let negative = prim.is_signed_integer() && ext[0] & 0x80 != 0;
    if negative {
        be = [0xff; 16];
    }
    be[16 - ext.len()..].copy_from_slice(ext);
    let value = i128::from_be_bytes(be);
    let size = native.len();
    native.copy_from_slice(
        &value.to_ne_bytes()[if cfg!(target_endian = "little") {
            0..size
        } else {
            16 - size..16
        }],
    );
}

impl Datatype {
    /// Bytes of `count` elements in `datarep` (`MPI_Pack_external_size`).
    ///
    /// # Errors
    ///
    /// A representation other than `"external32"`; a type holding a
    /// primitive external32 cannot represent here; the size overflows.
    pub fn external_size(&self, datarep: &str, count: usize) -> Result<usize, DatatypeError> {
        const NAME: &str = "MPI_Pack_external_size";
        self::datarep(NAME, datarep)?;
        self.external_ready(NAME)?;
        self.inner()
            .external32
            .checked_mul(count)
            .ok_or(DatatypeError::Overflow {
                name: NAME,
                what: "size",
            })
    }

    fn external_ready(&self, name: &'static str) -> Result<(), DatatypeError> {
        match self.inner().no_external32 {
            Some(prim) => Err(DatatypeError::NoExternal32 { name, prim }),
            None => Ok(()),
        }
    }

    /// Visits every value of `count` elements: `visit(disp, prim)`.
    fn each_value(
        &self,
        count: usize,
        mut visit: impl FnMut(isize, Primitive) -> Result<(), DatatypeError>,
    ) -> Result<(), DatatypeError> {
        let t = self.inner();
        let extent = self.extent();
        let mut failed = Ok(());
        for i in 0..count {
            let mut window = Window {
                skip: 0,
                left: t.size,
            };
            walk(
                &t.nodes,
                i as isize * extent,
                &mut window,
                &mut |disp, prim, _, len| {
                    let size = prim.size();
                    for k in 0..len / size {
                        if failed.is_ok() {
                            failed = visit(disp + (k * size) as isize, prim);
                        }
                    }
                },
            );
            failed.clone()?;
        }
        Ok(())
    }

    /// Packs `count` elements whose origin is byte `origin` of `buf` into
    /// `out` at `*position` in `datarep`, and advances `*position` past
    /// them (`MPI_Pack_external`).
    ///
    /// # Errors
    ///
    /// A representation other than `"external32"`; a type external32
    /// cannot represent here; elements reaching outside `buf`; no room in
    /// `out` (nothing is written); a `long` or `wchar_t` value too large
    /// for its external32 size (the values before it are written, and
    /// `*position` stays).
    pub fn pack_external(
        &self,
        datarep: &str,
        buf: &[u8],
        origin: usize,
        count: usize,
        out: &mut [u8],
        position: &mut usize,
    ) -> Result<(), DatatypeError> {
        const NAME: &str = "MPI_Pack_external";
        self::datarep(NAME, datarep)?;
        self.external_ready(NAME)?;
        self.check_reach(NAME, count, origin, buf.len())?;
        let needed = self.external_size(datarep, count)?;
        let range = span(NAME, out.len(), *position, needed)?;
        let room = &mut out[range];
        let mut at = 0;
        self.each_value(count, |disp, prim| {
            let from = (origin as isize + disp) as usize;
            let ext = prim.external32_size();
            to_external(
                NAME,
                prim,
                &buf[from..from + prim.size()],
                &mut room[at..at + ext],
            )?;
            at += ext;
            Ok(())
        })?;
        *position += needed;
        Ok(())
    }

    /// Unpacks `count` elements in `datarep` from `input` at `*position`
    /// into the elements whose origin is byte `origin` of `buf`, and
    /// advances `*position` past them (`MPI_Unpack_external`).
    ///
    /// # Errors
    ///
    /// A representation other than `"external32"`; a type external32
    /// cannot represent here; elements reaching outside `buf`; `input`
    /// holding fewer bytes than they take (nothing is written).
    pub fn unpack_external(
        &self,
        datarep: &str,
        input: &[u8],
        position: &mut usize,
        buf: &mut [u8],
        origin: usize,
        count: usize,
    ) -> Result<(), DatatypeError> {
        const NAME: &str = "MPI_Unpack_external";
        self::datarep(NAME, datarep)?;
        self.external_ready(NAME)?;
        self.check_reach(NAME, count, origin, buf.len())?;
        let needed = self.external_size(datarep, count)?;
        let data = &input[span(NAME, input.len(), *position, needed)?];
        let mut at = 0;
        self.each_value(count, |disp, prim| {
            let to = (origin as isize + disp) as usize;
            let ext = prim.external32_size();
            from_external(prim, &data[at..at + ext], &mut buf[to..to + prim.size()]);
            at += ext;
            Ok(())
        })?;
        *position += needed;
        Ok(())
    }
}

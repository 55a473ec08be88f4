//! The seq mapper (`--map-by seq`): one process per host line, in order.
//!
//! The lines are the app's own hostfile lines (or `--host` items); an app
//! without a host list walks the allocation's lines, continuing where the
//! previous such app stopped. A host may appear on several lines and gets
//! one process per line. `-n` defaults to the number of lines left; more
//! than that is an error. Nodes still obey their limits (see
//! [`oxmpi_framework_rmaps::base`]).

use oxmpi_framework_rmaps::base::{run, Ctx, Placement};
use oxmpi_framework_rmaps::JobMap;
use oxmpi_framework_rmaps::MapRequest;
use oxmpi_framework_rmaps::Mapper;
use oxmpi_framework_rmaps::{MapBy, MapPolicy};
use oxmpi_framework_rmaps::{MapError, MapErrorKind};
use std::collections::HashMap;

/// The seq component.
pub struct Seq;

fn place(ctx: &mut Ctx<'_>, app: usize, _nodes: &[usize]) -> Result<Vec<Placement>, MapError> {
    let req = ctx.req;
    let (lines, own) = match &req.apps[app].hosts {
        Some(f) => (&f.sequence[..], true),
        None => (
            &req.allocation.sequence[ctx.seq_cursor.min(req.allocation.sequence.len())..],
            false,
        ),
    };
    let n = match req.apps[app].np {
        Some(n) => ctx.check_np(app, n)? as usize,
        None => lines.len(),
    };
    if n == 0 || n > lines.len() {
        return Err(MapError::new(
            MapErrorKind::SeqTooFew,
            format!(
                "{}--map-by seq places one rank per host line, and {} has {} line(s) left for {} rank(s); nothing was launched. List more lines (a host may repeat) or give fewer ranks with -n.",
                ctx.app_label(app),
                if own { "the app's host list".to_string() } else { req.allocation.source.to_string() },
                lines.len(),
                if n == 0 { "any".to_string() } else { n.to_string() },
            ),
        ));
    }
    let index: HashMap<&str, usize> = req
        .allocation
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| (node.name.as_str(), i))
        .collect();
    let mut wanted: HashMap<usize, u64> = HashMap::new();
    for name in &lines[..n] {
        let i = index.get(name.as_str()).copied().ok_or_else(|| {
            MapError::new(
                MapErrorKind::BadRequest,
                format!("{}host {name} is not in the allocation", ctx.app_label(app)),
            )
        })?;
        *wanted.entry(i).or_insert(u64::from(ctx.nodes[i].used)) += 1;
    }
    let mut out = Vec::with_capacity(n);
    for name in &lines[..n] {
        let i = index[name.as_str()];
        if !ctx.nodes[i].under_limit() {
            return Err(ctx.node_full(app, i, wanted[&i], "--map-by seq puts"));
        }
        out.push(ctx.place(i, None));
    }
    if !own {
        ctx.seq_cursor += n;
    }
    Ok(out)
}

impl Mapper for Seq {
    type Params = crate::Params;
    const NAME: &'static str = "seq";

    fn accepts(&self, policy: &MapPolicy) -> bool {
        policy.map_by == MapBy::Seq
    }

    fn map(&self, req: &MapRequest, _params: &crate::Params) -> Result<JobMap, MapError> {
        run(req, Self::NAME, place)
    }
}

//! A type's description: the runs of primitives one element holds, with
//! repetitions kept as loops (a vector of a million blocks is one node,
//! not a million), and the walk that packing and counting share.

use crate::Primitive;
use std::sync::Arc;

/// One node of a description. Displacements are bytes from the
/// element's origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// `count` values of `prim`, one after another from `disp`.
    Run {
        disp: isize,
        prim: Primitive,
        count: usize,
    },
    /// `count` copies of `body`, copy `i` shifted by `disp + i × stride`.
    Repeat {
        disp: isize,
        count: usize,
        stride: isize,
        body: Arc<[Node]>,
        /// Data bytes of one copy of `body`.
        body_size: usize,
    },
}

impl Node {
    /// Data bytes of the node.
    #[inline]
    pub(crate) fn size(&self) -> usize {
        match self {
            Node::Run { prim, count, .. } => prim.size() * count,
            Node::Repeat {
                count, body_size, ..
            } => count * body_size,
        }
    }

    fn shifted(&self, by: isize) -> Node {
        let mut n = self.clone();
        match &mut n {
            Node::Run { disp, .. } | Node::Repeat { disp, .. } => *disp += by,
        }
        n
    }
}

/// Appends `node` to `nodes`, merging it into the last node when both
/// are runs of one primitive that continue each other.
fn push(nodes: &mut Vec<Node>, node: Node) {
    if let (
        Some(Node::Run {
            disp: d0,
            prim: p0,
            count: c0,
        }),
        Node::Run { disp, prim, count },
    ) = (nodes.last_mut(), &node)
    {
        if p0 == prim && *d0 + (*c0 * prim.size()) as isize == *disp {
            *c0 += count;
            return;
        }
    }
    nodes.push(node);
}

/// Appends `count` copies of `body` (`body_size` data bytes each), copy
/// `i` at `disp + i × stride`, to `nodes`, in the simplest form: nothing
/// for no data, the body itself for one copy, one run for copies of a
/// run that continue each other.
pub(crate) fn push_repeat(
    nodes: &mut Vec<Node>,
    disp: isize,
    count: usize,
    stride: isize,
    body: &Arc<[Node]>,
    body_size: usize,
) {
    if count == 0 || body_size == 0 {
        return;
    }
    if count == 1 {
        for n in body.iter() {
            push(nodes, n.shifted(disp));
        }
        return;
    }
    if let [Node::Run {
        disp: d,
        prim,
        count: c,
    }] = &body[..]
    {
        if stride == (c * prim.size()) as isize {
            push(
                nodes,
                Node::Run {
                    disp: disp + d,
                    prim: *prim,
                    count: c * count,
                },
            );
            return;
        }
    }
    push(
        nodes,
        Node::Repeat {
            disp,
            count,
            stride,
            body: body.clone(),
            body_size,
        },
    );
}

/// Where a walk is in the packed stream: bytes still to skip before the
/// first one visited, and bytes still to visit.
pub(crate) struct Window {
    pub(crate) skip: usize,
    pub(crate) left: usize,
}

/// Visits, in type-map order, the contiguous pieces of `nodes` placed at
/// `base` that fall in `window`: `visit(disp, prim, offset, len)` gets a
/// piece of `len` bytes at `disp` (from the buffer's origin) inside a run
/// of `prim` values, starting `offset` bytes into a value (0 unless the
/// window cut a value).
pub(crate) fn walk<F: FnMut(isize, Primitive, usize, usize)>(
    nodes: &[Node],
    base: isize,
    window: &mut Window,
    visit: &mut F,
) {
    for node in nodes {
        if window.left == 0 {
            return;
        }
        let size = node.size();
        if window.skip >= size {
            window.skip -= size;
            continue;
        }
        match node {
            Node::Run { disp, prim, .. } => {
                let skip = std::mem::take(&mut window.skip);
                let len = (size - skip).min(window.left);
                visit(base + disp + skip as isize, *prim, skip % prim.size(), len);
                window.left -= len;
            }
            Node::Repeat {
                disp,
                count,
                stride,
                body,
                body_size,
            } => {
                let first = window.skip / body_size;
                window.skip -= first * body_size;
                for i in first..*count {
                    if window.left == 0 {
                        return;
                    }
                    walk(body, base + disp + i as isize * stride, window, visit);
                }
            }
        }
    }
}

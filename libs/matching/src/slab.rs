//! A slab of nodes addressed by `u32` index, with a generation per slot so
//! that stale handles are detected, and intrusive doubly-linked lists
//! threaded through the nodes.
//!
//! Freed slots are reused (LIFO), so a steady state of inserts and removes
//! does not allocate.

/// "No node": the end of a list, or an empty list.
pub(crate) const NIL: u32 = u32::MAX;

struct Slot<N> {
    generation: u32,
    value: Option<N>,
}

/// Nodes addressed by index; see the module documentation.
pub(crate) struct Slab<N> {
    slots: Vec<Slot<N>>,
    free: Vec<u32>,
    len: usize,
}

impl<N> Slab<N> {
    pub(crate) const fn new() -> Slab<N> {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// Stores `value`; returns its index and the slot's generation.
    #[inline]
    pub(crate) fn insert(&mut self, value: N) -> (u32, u32) {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            debug_assert!(slot.value.is_none());
            slot.value = Some(value);
            (index, slot.generation)
        } else {
            let index = u32::try_from(self.slots.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("more than 2^32 - 1 nodes in a matching queue");
            self.slots.push(Slot {
                generation: 0,
                value: Some(value),
            });
            (index, 0)
        }
    }

    /// Removes and returns the node at `index`; the slot's generation moves
    /// on, so handles to it become stale. Panics if the slot is empty (an
    /// internal invariant).
    #[inline]
    pub(crate) fn remove(&mut self, index: u32) -> N {
        let slot = &mut self.slots[index as usize];
        let value = slot
            .value
            .take()
            .expect("matching slab: remove of a free slot");
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index);
        self.len -= 1;
        value
    }

    /// The node at `index` if the slot is occupied and still has
    /// `generation`.
    #[inline]
    pub(crate) fn get_checked(&self, index: u32, generation: u32) -> Option<&N> {
        let slot = self.slots.get(index as usize)?;
        if slot.generation == generation {
            slot.value.as_ref()
        } else {
            None
        }
    }

    /// Mutable form of [`Slab::get_checked`].
    #[inline]
    pub(crate) fn get_checked_mut(&mut self, index: u32, generation: u32) -> Option<&mut N> {
        let slot = self.slots.get_mut(index as usize)?;
        if slot.generation == generation {
            slot.value.as_mut()
        } else {
            None
        }
    }

    /// The generation of the slot at `index`.
    #[inline]
    pub(crate) fn generation(&self, index: u32) -> u32 {
        self.slots[index as usize].generation
    }

    /// Number of slots, occupied or free (the high-water mark).
    #[cfg(test)]
    pub(crate) fn capacity_used(&self) -> usize {
        self.slots.len()
    }

    /// Number of occupied slots.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The occupied slots, by index.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &N)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.value.as_ref().map(|v| (i as u32, v)))
    }
}

impl<N> std::ops::Index<u32> for Slab<N> {
    type Output = N;

    #[inline]
    fn index(&self, index: u32) -> &N {
        self.slots[index as usize]
            .value
            .as_ref()
            .expect("matching slab: read of a free slot")
    }
}

impl<N> std::ops::IndexMut<u32> for Slab<N> {
    #[inline]
    fn index_mut(&mut self, index: u32) -> &mut N {
        self.slots[index as usize]
            .value
            .as_mut()
            .expect("matching slab: write of a free slot")
    }
}

/// The links of a node in one list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Links {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl Links {
    pub(crate) const UNLINKED: Links = Links {
        prev: NIL,
        next: NIL,
    };
}

/// A doubly-linked list of slab nodes, oldest first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct List {
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl List {
    pub(crate) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    /// Appends node `index` (whose links `links` selects) at the tail.
    #[inline]
    pub(crate) fn push_back<N>(
        &mut self,
        slab: &mut Slab<N>,
        index: u32,
        links: fn(&mut N) -> &mut Links,
    ) {
        *links(&mut slab[index]) = self.tail_links();
        self.link_last(slab, index, links);
    }

    /// The links a node appended at the tail gets: for a node built with
    /// them before it is inserted, then made the tail by
    /// [`List::link_last`] (one look-up of the node fewer than
    /// [`List::push_back`]).
    #[inline]
    pub(crate) fn tail_links(&self) -> Links {
        Links {
            prev: self.tail,
            next: NIL,
        }
    }

    /// Makes node `index`, inserted with [`List::tail_links`] (nothing
    /// changed this list since), its tail.
    #[inline]
    pub(crate) fn link_last<N>(
        &mut self,
        slab: &mut Slab<N>,
        index: u32,
        links: fn(&mut N) -> &mut Links,
    ) {
        if self.tail == NIL {
            self.head = index;
        } else {
            links(&mut slab[self.tail]).next = index;
        }
        self.tail = index;
    }

    /// Takes node `index` out of this list (it must be in it).
    #[inline]
    pub(crate) fn unlink<N>(
        &mut self,
        slab: &mut Slab<N>,
        index: u32,
        links: fn(&mut N) -> &mut Links,
    ) {
        let taken = std::mem::replace(links(&mut slab[index]), Links::UNLINKED);
        self.close_gap(slab, taken, links);
    }

    /// Joins the neighbours of a node that left this list (already
    /// removed from `slab`, say) whose links were `taken`.
    #[inline]
    pub(crate) fn close_gap<N>(
        &mut self,
        slab: &mut Slab<N>,
        taken: Links,
        links: fn(&mut N) -> &mut Links,
    ) {
        let Links { prev, next } = taken;
        if prev == NIL {
            self.head = next;
        } else {
            links(&mut slab[prev]).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            links(&mut slab[next]).prev = prev;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Node {
        links: Links,
        value: u32,
    }

    fn links(n: &mut Node) -> &mut Links {
        &mut n.links
    }

    fn collect(list: &List, slab: &Slab<Node>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = list.head;
        while i != NIL {
            out.push(slab[i].value);
            i = slab[i].links.next;
        }
        out
    }

    #[test]
    fn slots_are_reused_and_old_generations_refused() {
        let mut slab = Slab::new();
        let (a, ga) = slab.insert(Node {
            links: Links::UNLINKED,
            value: 1,
        });
        slab.remove(a);
        assert!(slab.get_checked(a, ga).is_none());
        let (b, gb) = slab.insert(Node {
            links: Links::UNLINKED,
            value: 2,
        });
        assert_eq!(a, b, "a freed slot is reused");
        assert_ne!(ga, gb);
        assert_eq!(slab.get_checked(b, gb).map(|n| n.value), Some(2));
        assert_eq!(slab.len(), 1);
    }

    #[test]
    fn lists_link_and_unlink_anywhere() {
        let mut slab = Slab::new();
        let mut list = List::EMPTY;
        let ids: Vec<u32> = (0..5)
            .map(|v| {
                let (i, _) = slab.insert(Node {
                    links: Links::UNLINKED,
                    value: v,
                });
                list.push_back(&mut slab, i, links);
                i
            })
            .collect();
        assert_eq!(collect(&list, &slab), [0, 1, 2, 3, 4]);
        list.unlink(&mut slab, ids[2], links);
        list.unlink(&mut slab, ids[0], links);
        list.unlink(&mut slab, ids[4], links);
        assert_eq!(collect(&list, &slab), [1, 3]);
        list.unlink(&mut slab, ids[1], links);
        list.unlink(&mut slab, ids[3], links);
        assert_eq!((list.head, list.tail), (NIL, NIL));
    }
}

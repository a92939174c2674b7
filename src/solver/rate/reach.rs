//! Which of SE's forcing chains and cycles (not dynamic) exist, before
//! any is followed. On a grid the chain does not change, the nodes a chain
//! from `n` finds are exactly those reachable from `n` in the graph of
//! links; so the graph's strongly connected components, each with the
//! set of nodes it reaches, tell at once for every candidate whether its
//! truth reaches its falsehood or its falsehood its truth, and whether
//! its truth lies on a cycle. Only those chains are then followed, for
//! their parents.
//!
//! Inside a nested chain only the chains through a link the outer chain
//! made matter; [`NewLinks`] finds their starts with a few searches on
//! cell sets from those links instead (the graph is its own
//! contrapositive).

use super::graph::{NODES, candidate, node};
use super::state::{
    CELL_BIT, HOUSE_CELLS, HOUSES_OF, Index, PEERS, State, bits, bits32, bivalue, cells_of,
    cells_where, has, holders,
};
use super::{Budget, Exhausted};

const NONE: u32 = u32::MAX;

/// The most search nodes [`on_placements`] spends on one digit before it
/// gives up (and answers that a candidate may lie on no placement).
const PLACEMENT_NODES: u32 = 2_000;

/// The digits of `digits` whose links alone may remove or place something
/// in `state`: those with a candidate on no placement of the digit (a
/// cell in every row, column and box, its placed cells among them), or
/// with a hidden or a naked single.
///
/// Every conclusion drawn from one digit's links (X-cycles, forcing
/// X-chains, Nishio, fish) holds in every placement of that digit, so a
/// candidate it removes lies on none. A digit forced into a cell lies
/// there in every placement, so its other places in the cell's houses lie
/// on none, unless there are none: a hidden single. (A cell left with the
/// digit alone may be forced by its emptiness rather than by the digit's
/// links: a naked single.) For any other digit such a search finds
/// nothing, and is spared.
pub(super) fn digits_with_single_digit_conclusions(
    state: &State,
    index: &Index,
    digits: u16,
    memo: &mut Placements,
) -> u16 {
    // Per digit, the rows, columns and boxes where it is placed.
    let (mut rows, mut cols, mut boxes) = ([0u16; 9], [0u16; 9], [0u16; 9]);
    for (cell, &v) in state.value.iter().enumerate() {
        if v != 0 {
            let d = usize::from(v - 1);
            rows[d] |= 1 << (cell / 9);
            cols[d] |= 1 << (cell % 9);
            boxes[d] |= 1 << box_of(cell / 9, cell % 9);
        }
    }
    // The digits alone in a cell.
    let naked = state
        .cand
        .iter()
        .filter(|c| c.count_ones() == 1)
        .fold(0u16, |set, &c| set | c);
    let mut kept = 0;
    for d in bits(digits) {
        let single =
            naked & 1 << d != 0 || index.places.iter().any(|house| house[d].count_ones() == 1);
        if single || !memo.on_placements(index, d, rows[d], cols[d], boxes[d]) {
            kept |= 1 << d;
        }
    }
    kept
}

/// What [`on_placements`] last answered for each digit, with what it
/// answered from: the digit's places in each row, and the rows, columns
/// and boxes where it is placed. A path removes a few candidates a step,
/// so most digits are asked again about the same places.
pub(super) struct Placements {
    answers: [Option<Answer>; 9],
}

/// One digit's answer: its places in each row, the rows, columns and
/// boxes where it is placed, and whether every candidate lies on a
/// placement.
type Answer = ([u16; 9], [u16; 3], bool);

impl Placements {
    /// Nothing answered yet.
    pub(super) fn new() -> Placements {
        Placements { answers: [None; 9] }
    }

    /// [`on_placements`], from the last answer for the same places.
    fn on_placements(&mut self, index: &Index, d: usize, rows: u16, cols: u16, boxes: u16) -> bool {
        let places: [u16; 9] = std::array::from_fn(|r| index.places[r][d]);
        let placed = [rows, cols, boxes];
        match self.answers[d] {
            Some((p, q, answer)) if p == places && q == placed => answer,
            _ => {
                let answer = on_placements(index, d, rows, cols, boxes);
                self.answers[d] = Some((places, placed, answer));
                answer
            }
        }
    }
}

/// Whether every candidate of digit `d` lies on a placement of it: a
/// cell in each row not in `rows` (where it is placed), no two in a
/// column or box, none in `cols` and `boxes`. `false` when one lies on
/// none, or the search passes [`PLACEMENT_NODES`].
fn on_placements(index: &Index, d: usize, rows: u16, cols: u16, boxes: u16) -> bool {
    // The open rows and their candidates' columns, fewest first.
    let mut open = [(0u8, 0u16); 9];
    let mut n = 0;
    for r in (0..9).filter(|r| rows & 1 << r == 0) {
        let places = index.places[r][d];
        if places == 0 {
            return false;
        }
        open[n] = (r as u8, places);
        n += 1;
    }
    let open = &mut open[..n];
    open.sort_unstable_by_key(|&(_, places)| places.count_ones());
    let mut covered = [0u16; 9];
    let mut choice = [0u8; 9];
    let mut nodes = 0u32;
    for i in 0..open.len() {
        let (r, places) = open[i];
        for col in bits(places & !covered[i]) {
            // A placement through the candidate, which takes its row.
            let b = box_of(usize::from(r), col);
            if cols & 1 << col != 0 || boxes & 1 << b != 0 {
                return false;
            }
            choice[i] = col as u8;
            let used = (cols | 1 << col, boxes | 1 << b);
            if !place(open, i, 0, used, &mut choice, &mut nodes) {
                return false;
            }
            for (covered, &col) in covered.iter_mut().zip(&choice[..open.len()]) {
                *covered |= 1 << col;
            }
        }
    }
    true
}

/// Chooses a column for each of the rows `rows[k..]` but row `skip` (its
/// column is chosen), no two in a column or box, none in the columns and
/// boxes of `used`, into `choice`; `false` when there is no such choice,
/// or once `nodes` passes [`PLACEMENT_NODES`].
fn place(
    rows: &[(u8, u16)],
    skip: usize,
    k: usize,
    used: (u16, u16),
    choice: &mut [u8; 9],
    nodes: &mut u32,
) -> bool {
    if k == rows.len() {
        return true;
    }
    if k == skip {
        return place(rows, skip, k + 1, used, choice, nodes);
    }
    let (cols, boxes) = used;
    let (r, places) = rows[k];
    for col in bits(places & !cols) {
        let b = box_of(usize::from(r), col);
        if boxes & 1 << b != 0 {
            continue;
        }
        *nodes += 1;
        if *nodes > PLACEMENT_NODES {
            return false;
        }
        choice[k] = col as u8;
        if place(
            rows,
            skip,
            k + 1,
            (cols | 1 << col, boxes | 1 << b),
            choice,
            nodes,
        ) {
            return true;
        }
    }
    false
}

/// The box of row `r`, column `c`, from 0.
fn box_of(r: usize, c: usize) -> usize {
    r / 3 * 3 + c / 3
}

/// The components of one grid's two graphs of links, without and with
/// links inside cells, each made when first asked for.
pub(super) struct Lazy<'a> {
    space: &'a mut [Forced; 2],
    made: [bool; 2],
    /// The digits whose part of the graph without links inside cells is
    /// worked out (the others' chains answer false).
    x_digits: u16,
}

impl<'a> Lazy<'a> {
    /// Nothing made yet, in `space`; of the graph without links inside
    /// cells, only the parts of `x_digits`.
    pub(super) fn new(space: &'a mut [Forced; 2], x_digits: u16) -> Lazy<'a> {
        Lazy {
            space,
            made: [false; 2],
            x_digits,
        }
    }

    /// The graph of `cand` with links inside cells (`y`) or not, made on
    /// the first call (one unit of work per node of the whole graph,
    /// whatever the digits worked out). `cand` is the same grid on every
    /// call.
    pub(super) fn get(
        &mut self,
        cand: &[u16; 81],
        y: bool,
        budget: &mut Budget,
    ) -> Result<&Forced, Exhausted> {
        let i = usize::from(y);
        if !self.made[i] {
            self.made[i] = true;
            let digits = if y { 0x1FF } else { self.x_digits };
            let nodes = self.space[i].build(cand, y, digits, true);
            if !budget.spend_many(nodes as u64) {
                return Err(Exhausted);
            }
        }
        Ok(&self.space[i])
    }
}

/// Which forcing chains (not dynamic) of one grid reach their target:
/// the candidates whose truth reaches their falsehood, and those whose
/// falsehood reaches their truth; and the candidates whose truth lies on
/// a cycle (it reaches a false node that links back to it: a nontrivial
/// component). Only that is asked of the graph, so the graph is smaller
/// than the graph of links:
///
/// - a false node with no link out (its cell not bivalue, no house where
///   its digit has one other place) reaches nothing: it is left out, with
///   the links to it;
/// - links alternate between true and false nodes, and a false node is
///   reached only from the true nodes linked to it, so the sets of nodes
///   reached need only the true nodes: the truth of `x` reaches its
///   falsehood when it reaches the truth of a candidate linked to `x`;
/// - without links inside cells, the graph falls apart by digit, each
///   part with at most 81 true nodes: there a search on cell sets from
///   each true node costs less than the components, and gives the same
///   answers.
pub(super) struct Forced {
    id: Vec<u32>,
    /// The nodes given an id, in id order: the true nodes first.
    nodes: Vec<usize>,
    closure: Closure,
    /// Bit per node: its chain reaches its conjugate.
    forced: Vec<u64>,
    /// Bit per true node: it lies on a cycle.
    cyclic: Vec<u64>,
    /// Bit per true node: it lies on a cycle whose component could
    /// remove something (see [`Forced::on_removing_cycle`]).
    removing: Vec<u64>,
    /// Per nontrivial component, per digit, the cells that see a true
    /// node of it, and those that see a false node.
    sight: Vec<([u128; 9], [u128; 9])>,
    /// The grid whose graph with links inside cells was built last, if
    /// that was the last graph built ([`Forced::truths_reached`] reads
    /// it).
    with_cells: Option<[u16; 81]>,
}

impl Forced {
    pub(super) fn new() -> Forced {
        Forced {
            id: vec![NONE; NODES],
            nodes: Vec::new(),
            closure: Closure::new(),
            forced: vec![0; NODES.div_ceil(64)],
            cyclic: vec![0; NODES.div_ceil(64)],
            removing: vec![0; NODES.div_ceil(64)],
            sight: Vec::new(),
            with_cells: None,
        }
    }

    /// Works out, for the grid `cand` with links inside cells (`y`) or
    /// not, which chains reach their target: all of them with `y`,
    /// without it those of the digits in `digits` (the others are left
    /// unknown, and answer false). With `cycles`, also which true nodes
    /// lie on cycles ([`Forced::on_cycle`],
    /// [`Forced::on_removing_cycle`]); without, none answers true.
    /// Returns the number of nodes of the whole graph of links (two per
    /// candidate), the work it stands for.
    pub(super) fn build(&mut self, cand: &[u16; 81], y: bool, digits: u16, cycles: bool) -> usize {
        self.clear_answers();
        self.with_cells = None;
        let holders = holders(cand);
        if y {
            self.with_cells(cand, &holders, &linked(cand, &holders), cycles);
        } else {
            for d in bits(digits) {
                self.one_digit(holders[d], d, cycles);
            }
        }
        2 * holders
            .iter()
            .map(|h| h.count_ones() as usize)
            .sum::<usize>()
    }

    /// Works out the components of the graph of `cand` (whose digits may
    /// go in `holders`) with links inside cells for
    /// [`Forced::truths_reached`] alone (every other answer is false).
    pub(super) fn build_reach(&mut self, cand: &[u16; 81], holders: &[u128; 9]) {
        self.clear_answers();
        self.with_cells = None;
        self.components_with_cells(cand, holders, &linked(cand, holders));
    }

    /// Per digit, the cells of the true nodes reached from the candidate
    /// `n` true (itself among them), on the graph last built with links
    /// inside cells.
    pub(super) fn truths_reached(&self, n: usize) -> [u128; 9] {
        let mut on = [0u128; 9];
        let id = self.id[n];
        if id == NONE {
            return on;
        }
        for (w, &word) in self.closure.row(id).iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let m = self.nodes[w * 64 + word.trailing_zeros() as usize];
                word &= word - 1;
                let (cell, d) = candidate(m);
                on[d] |= CELL_BIT[cell];
            }
        }
        on
    }

    /// The component of the node `n`, one of the graph last built with
    /// links inside cells (its nodes all reach the same nodes).
    pub(super) fn component(&self, n: usize) -> usize {
        debug_assert!(self.id[n] != NONE);
        self.closure.scc_of[self.id[n] as usize] as usize
    }

    /// The number of components of the graph last built.
    pub(super) fn components(&self) -> usize {
        self.closure.components
    }

    /// Every answer false, before a graph is worked out.
    fn clear_answers(&mut self) {
        self.forced.fill(0);
        self.cyclic.fill(0);
        self.removing.fill(0);
    }

    /// No node has an id, before a graph's nodes are numbered.
    fn forget_nodes(&mut self) {
        for &n in &self.nodes {
            self.id[n] = NONE;
        }
        self.nodes.clear();
    }

    /// Whether the chain from `n` reaches its conjugate (false for a node
    /// not of the grid built, or of a digit left out).
    pub(super) fn reaches_conjugate(&self, n: usize) -> bool {
        self.forced[n / 64] & (1 << (n % 64)) != 0
    }

    /// Whether the true node `n` lies on a cycle: its chain reaches a
    /// false node that forces it (same exceptions as above).
    #[cfg(test)]
    pub(super) fn on_cycle(&self, n: usize) -> bool {
        self.cyclic[n / 64] & (1 << (n % 64)) != 0
    }

    /// Whether the true node `n` lies on a cycle that may remove
    /// something. A cycle removes a candidate that sees a true node and a
    /// false node of its digit on it; every node of a cycle lies in one
    /// strongly connected component, so where no candidate sees a true
    /// and a false node of its digit in `n`'s component, no cycle through
    /// `n` removes anything, and this is false. Without links inside
    /// cells it is [`Forced::on_cycle`].
    pub(super) fn on_removing_cycle(&self, n: usize) -> bool {
        self.removing[n / 64] & (1 << (n % 64)) != 0
    }

    /// Works out, for the grid `cand` with links inside cells but none
    /// from a false node within a house (SE's Y-cycles), which true nodes
    /// of the bivalue `cells` lie on a cycle that may remove something
    /// ([`Forced::on_removing_cycle`]); nothing else is answered. `cells`
    /// must hold every cell of every such cycle. There a false node links
    /// out only inside a bivalue cell, so a cycle's nodes all lie in
    /// bivalue cells: four per cell of `cells`.
    /// Returns the number of nodes, the work it stands for.
    pub(super) fn build_y_cycles(&mut self, cand: &[u16; 81], cells: u128) -> usize {
        self.clear_answers();
        self.with_cells = None;
        self.forget_nodes();
        for cell in cells_of(cells) {
            for d in bits(cand[cell]) {
                for on in [true, false] {
                    self.id[node(cell, d, on)] = self.nodes.len() as u32;
                    self.nodes.push(node(cell, d, on));
                }
            }
        }
        self.closure.clear();
        for &n in &self.nodes {
            let (cell, d) = candidate(n);
            let other = (cand[cell] & !(1 << d)).trailing_zeros() as usize;
            self.closure.open_node(NONE);
            if n % 2 == 1 {
                // True: the cell's other digit false, and the digit false
                // in the peers among `cells`.
                self.closure.edge(self.id[node(cell, other, false)]);
                for c in cells_of(PEERS[cell] & cells) {
                    if cand[c] & (1 << d) != 0 {
                        self.closure.edge(self.id[node(c, d, false)]);
                    }
                }
            } else {
                // False: the cell's other digit true.
                self.closure.edge(self.id[node(cell, other, true)]);
            }
        }
        self.closure.solve(0);
        self.mark_cycles(&holders(cand));
        self.nodes.len()
    }

    /// Once the components are solved: the true nodes on a cycle
    /// (`cyclic`), and those of them whose component has a candidate of
    /// `holders` that sees a true and a false node of its digit in it
    /// (`removing`).
    fn mark_cycles(&mut self, holders: &[u128; 9]) {
        self.sight.clear();
        self.sight
            .resize(self.closure.nontrivial(), ([0u128; 9], [0u128; 9]));
        for (i, &n) in self.nodes.iter().enumerate() {
            if let Some(k) = self.closure.nontrivial_of(i as u32) {
                let (cell, d) = candidate(n);
                let (on, off) = &mut self.sight[k];
                let side = if n % 2 == 1 { on } else { off };
                side[d] |= PEERS[cell];
            }
        }
        for (i, &n) in self.nodes.iter().enumerate() {
            if n % 2 == 0 {
                continue;
            }
            if let Some(k) = self.closure.nontrivial_of(i as u32) {
                self.cyclic[n / 64] |= 1 << (n % 64);
                let (on, off) = &self.sight[k];
                if (0..9).any(|e| on[e] & off[e] & holders[e] != 0) {
                    self.removing[n / 64] |= 1 << (n % 64);
                }
            }
        }
    }

    /// The part of digit `d` without links inside cells, where `held`
    /// are the digit's cells: on cell sets, a search from each true node
    /// for the true nodes it reaches (a true node makes the digit false
    /// in its peers; a false node makes it true in the only other place
    /// of a house, if any).
    fn one_digit(&mut self, held: u128, d: usize, cycles: bool) {
        // The true cells a false node forces, per cell, and the cells
        // whose falsehood links out at all.
        let mut conj = [0u128; 81];
        let mut linked = 0u128;
        for house in HOUSE_CELLS {
            let places = house & held;
            if places.count_ones() == 2 {
                let a = places.trailing_zeros() as usize;
                let b = 127 - places.leading_zeros() as usize;
                conj[a] |= 1 << b;
                conj[b] |= 1 << a;
                linked |= places;
            }
        }
        // Per true cell, the true cells reached in one link or more.
        let mut reach = [0u128; 81];
        for c in cells_of(held) {
            let (mut on, mut off) = (0u128, 0u128);
            let mut frontier = CELL_BIT[c];
            while frontier != 0 {
                let mut falses = 0u128;
                for x in cells_of(frontier) {
                    falses |= PEERS[x];
                }
                falses &= linked & !off;
                off |= falses;
                let mut trues = 0u128;
                for y in cells_of(falses) {
                    trues |= conj[y];
                }
                frontier = trues & !on;
                on |= frontier;
            }
            reach[c] = on;
        }
        for c in cells_of(held) {
            let n = node(c, d, true);
            // Its truth reaches the truth of a peer: its falsehood.
            if reach[c] & PEERS[c] != 0 {
                self.forced[n / 64] |= 1 << (n % 64);
            }
            if cycles && has(reach[c], c) {
                self.cyclic[n / 64] |= 1 << (n % 64);
                self.removing[n / 64] |= 1 << (n % 64);
            }
        }
        for f in cells_of(linked) {
            // Its falsehood reaches its truth.
            if cells_of(conj[f]).any(|t| has(reach[t], f)) {
                let n = node(f, d, false);
                self.forced[n / 64] |= 1 << (n % 64);
            }
        }
    }

    /// The graph with links inside cells: every digit, whose false
    /// nodes with a link out are those of `linked`; the sets reached
    /// number true nodes by id.
    fn with_cells(
        &mut self,
        cand: &[u16; 81],
        holders: &[u128; 9],
        linked: &[u128; 9],
        cycles: bool,
    ) {
        let trues = self.components_with_cells(cand, holders, linked);
        if cycles {
            self.mark_cycles(holders);
        }
        for (i, &n) in self.nodes.iter().enumerate() {
            let (cell, d) = candidate(n);
            let forced = if i >= trues {
                self.closure.reaches(i as u32, self.id[n ^ 1])
            } else {
                // The truth of a candidate linked to this one: another of
                // its cell, or its digit in a peer.
                let row = self.closure.row(i as u32);
                let id = &self.id;
                let reached = |m: usize| row_has(row, id[m]);
                bits(cand[cell] & !(1 << d)).any(|e| reached(node(cell, e, true)))
                    || cells_of(PEERS[cell] & holders[d]).any(|c| reached(node(c, d, true)))
            };
            if forced {
                self.forced[n / 64] |= 1 << (n % 64);
            }
        }
    }

    /// The graph of [`Forced::with_cells`] numbered (the true nodes first,
    /// each with its number as its bit) and its components solved; the
    /// number of true nodes.
    fn components_with_cells(
        &mut self,
        cand: &[u16; 81],
        holders: &[u128; 9],
        linked: &[u128; 9],
    ) -> usize {
        self.forget_nodes();
        for (d, &held) in holders.iter().enumerate() {
            for cell in cells_of(held) {
                self.id[node(cell, d, true)] = self.nodes.len() as u32;
                self.nodes.push(node(cell, d, true));
            }
        }
        let trues = self.nodes.len();
        for (d, &set) in linked.iter().enumerate() {
            for cell in cells_of(set) {
                self.id[node(cell, d, false)] = self.nodes.len() as u32;
                self.nodes.push(node(cell, d, false));
            }
        }
        self.closure.clear();
        for (i, &n) in self.nodes.iter().enumerate() {
            let (cell, d) = candidate(n);
            let id = &self.id;
            let closure = &mut self.closure;
            if i < trues {
                closure.open_node(i as u32);
                for e in bits(cand[cell] & !(1 << d)) {
                    if has(linked[e], cell) {
                        closure.edge(id[node(cell, e, false)]);
                    }
                }
                for c in cells_of(PEERS[cell] & linked[d]) {
                    closure.edge(id[node(c, d, false)]);
                }
            } else {
                closure.open_node(NONE);
                links(cand, holders, false, cell, d, |(c, e)| {
                    closure.edge(id[node(c, e, true)]);
                });
            }
        }
        self.closure.solve(trues);
        self.with_cells = Some(*cand);
        trues
    }
}

/// Per digit, the cells whose falsehood has a link out with links inside
/// cells: a house where the digit has one other place, or a bivalue cell.
fn linked(cand: &[u16; 81], holders: &[u128; 9]) -> [u128; 9] {
    let bivalue = bivalue(cand);
    let mut linked = [0u128; 9];
    for (d, &held) in holders.iter().enumerate() {
        linked[d] = bivalue & held;
        for house in HOUSE_CELLS {
            let places = house & held;
            if places.count_ones() == 2 {
                linked[d] |= places;
            }
        }
    }
    linked
}

/// The candidates `(cell, d)` forces the other way, with links inside
/// cells: from its truth (`truth`), the cell's other digits and the
/// digit's other places in the cell's houses go false; from its
/// falsehood, a bivalue cell's other digit and the digit's only other
/// place in a house of the cell go true. Each once.
fn links(
    cand: &[u16; 81],
    holders: &[u128; 9],
    truth: bool,
    cell: usize,
    d: usize,
    mut visit: impl FnMut((usize, usize)),
) {
    if truth || cand[cell].count_ones() == 2 {
        for e in bits(cand[cell] & !(1 << d)) {
            visit((cell, e));
        }
    }
    let places = if truth {
        PEERS[cell] & holders[d]
    } else {
        HOUSES_OF[cell].iter().fold(0u128, |only, &h| {
            let others = HOUSE_CELLS[usize::from(h)] & holders[d] & !CELL_BIT[cell];
            if others.count_ones() == 1 {
                only | others
            } else {
                only
            }
        })
    };
    for c in cells_of(places) {
        visit((c, d));
    }
}

/// A set of nodes of the graph of links, on cell sets: per digit, the
/// cells whose truth and the cells whose falsehood it holds.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(super) struct NodeSet {
    on: [u128; 9],
    off: [u128; 9],
}

impl NodeSet {
    /// Whether the node `n` is in the set.
    pub(super) fn has(&self, n: usize) -> bool {
        let (cell, d) = candidate(n);
        let side = if n % 2 == 1 { &self.on } else { &self.off };
        has(side[d], cell)
    }

    /// Whether the set is empty.
    pub(super) fn is_empty(&self) -> bool {
        self.on.iter().chain(&self.off).all(|&s| s == 0)
    }

    /// The number of nodes in the set.
    pub(super) fn len(&self) -> u64 {
        self.on
            .iter()
            .chain(&self.off)
            .map(|s| u64::from(s.count_ones()))
            .sum()
    }

    /// Per digit, the cells of its true nodes and of its false nodes.
    pub(super) fn sides(&self) -> (&[u128; 9], &[u128; 9]) {
        (&self.on, &self.off)
    }

    /// Whether the set holds both truths of some candidate.
    pub(super) fn contradicts(&self) -> bool {
        self.on.iter().zip(&self.off).any(|(a, b)| a & b != 0)
    }
}

/// The links a chain's working grid `current` has and the grid before
/// the chain (`source`) had not, on `current`'s graph of links (not
/// dynamic): a digit left two places in a house where it had more, and a
/// cell left two candidates where it had more. Made once for a working
/// grid, asked by the nested forcing chains and multiple forcing chains.
///
/// The graph of links is its own contrapositive: `x` reaches `z` exactly
/// when the negation of `z` reaches the negation of `x`. Both questions
/// below come down, that way, to searches from the truth of the links'
/// sides.
pub(super) struct NewLinks<'a> {
    links: CellLinks<'a>,
    /// Each new link as its two sides (cell, digit); inside a cell, or in
    /// a house.
    sides: Vec<([(usize, usize); 2], bool)>,
}

impl<'a> NewLinks<'a> {
    #[cfg(test)]
    pub(super) fn new(source: &[u16; 81], current: &'a [u16; 81]) -> NewLinks<'a> {
        Self::with_holders(source, current, &holders(source), &holders(current))
    }

    /// [`NewLinks::new`] given the cells holding each digit in `source`
    /// (`before`) and in `current` (`now`).
    pub(super) fn with_holders(
        source: &[u16; 81],
        current: &'a [u16; 81],
        before: &[u128; 9],
        now: &[u128; 9],
    ) -> NewLinks<'a> {
        let links = CellLinks::new(current, now);
        let mut sides = Vec::new();
        for (d, &held) in before.iter().enumerate() {
            for house in bits32(links.pairs[d]) {
                let places = HOUSE_CELLS[house] & links.holders[d];
                if (HOUSE_CELLS[house] & held).count_ones() > 2 {
                    let a = places.trailing_zeros() as usize;
                    let b = 127 - places.leading_zeros() as usize;
                    sides.push(([(a, d), (b, d)], false));
                }
            }
        }
        for cell in cells_of(links.bivalue) {
            if source[cell].count_ones() > 2 {
                let a = current[cell].trailing_zeros() as usize;
                let b = 15 - current[cell].leading_zeros() as usize;
                sides.push(([(cell, a), (cell, b)], true));
            }
        }
        NewLinks { links, sides }
    }

    /// The digits with a new link in a house, and whether some cell has
    /// a new link.
    pub(super) fn kinds(&self) -> (u16, bool) {
        self.sides
            .iter()
            .fold((0, false), |(digits, cell), &(pair, in_cell)| {
                if in_cell {
                    (digits, true)
                } else {
                    (digits | 1 << pair[0].1, cell)
                }
            })
    }

    /// The starts of SE's forcing chains (not dynamic) on the working grid
    /// that can reach their own negation through a new link; with links
    /// inside cells (`y`) or without (then only the links of `digits`
    /// count, and the chains stay on one digit).
    ///
    /// `x` reaches its negation through the new link between `a` and `b`
    /// (from `a` false to `b` true, or the other way) exactly when the
    /// negation of `x` is reached both from `a` true and from `b` true:
    /// `x` reaches `a` false, and `b` true reaches the negation of `x`.
    /// Every start returned reaches its negation, and a chain from any
    /// other start reaches it, if at all, through links that were all
    /// there before.
    pub(super) fn forced_through(&self, y: bool, digits: u16) -> NodeSet {
        let mut reached: Vec<((usize, usize), NodeSet)> = Vec::new();
        let mut starts = NodeSet::default();
        for &(pair, in_cell) in &self.sides {
            if (in_cell && !y) || (!in_cell && digits & (1 << pair[0].1) == 0) {
                continue;
            }
            let [a, b] = pair.map(|side| {
                if let Some(&(_, set)) = reached.iter().find(|(s, _)| *s == side) {
                    set
                } else {
                    let mut ons = [0u128; 9];
                    ons[side.1] = 1 << side.0;
                    let set = self.links.reach_all(ons, y);
                    reached.push((side, set));
                    set
                }
            });
            // A node both reach is the negation of a start that reaches
            // its own negation through this link.
            for d in 0..9 {
                starts.off[d] |= a.on[d] & b.on[d];
                starts.on[d] |= a.off[d] & b.off[d];
            }
        }
        starts
    }

    /// The nodes whose chain (not dynamic, with links inside cells) can
    /// pass a new link: those that reach the falsehood of a side of one,
    /// that is the negations of the nodes reached from the truth of any
    /// side (read from `statics`, begun on the working grid).
    pub(super) fn passing(&self, statics: &mut StaticReach) -> NodeSet {
        debug_assert!(statics.cand == *self.links.cand);
        let mut passing = NodeSet::default();
        for &(pair, _) in &self.sides {
            for (cell, d) in pair {
                let reached = statics.reached_from(cell, d);
                for e in 0..9 {
                    passing.on[e] |= reached.off[e];
                    passing.off[e] |= reached.on[e];
                }
            }
        }
        passing
    }
}

/// What the static chains (not dynamic, with links inside cells) of one
/// grid can find: per candidate, every node reached from its truth in the
/// graph of links, a superset of what SE's chain from it finds (that chain
/// stops at its first contradiction). Worked out for a candidate when first
/// asked, and kept until the grid changes ([`StaticReach::begin`]).
///
/// A region or cell forcing chain concludes only nodes every one of its
/// chains finds; where the sets of its starts share no node that removes
/// anything, it concludes nothing that matters, and its chains need not
/// run.
pub(super) struct StaticReach {
    /// The grid, and the components of its graph of links.
    cand: [u16; 81],
    graph: Forced,
    holders: [u128; 9],
    /// The cells with two candidates or more.
    several: u128,
    /// Nodes reached from the truths of component `k`'s nodes (all of
    /// them reach the same), valid where `stamp[k]` is `now`.
    sets: Vec<NodeSet>,
    stamp: Vec<u32>,
    now: u32,
}

impl StaticReach {
    pub(super) fn new() -> StaticReach {
        StaticReach {
            cand: [0; 81],
            graph: Forced::new(),
            holders: [0; 9],
            several: 0,
            sets: Vec::new(),
            stamp: Vec::new(),
            now: 0,
        }
    }

    /// The grid is now `cand`: the sets worked out are forgotten, unless
    /// it was `cand` already.
    pub(super) fn begin(&mut self, cand: &[u16; 81]) {
        self.begin_with(cand, None);
    }

    /// [`StaticReach::begin`], taking the components from `made` (which
    /// gets this one's in exchange) where it holds those of `cand`'s
    /// graph with links inside cells.
    pub(super) fn begin_with(&mut self, cand: &[u16; 81], made: Option<&mut Forced>) {
        if self.now != 0 && self.cand == *cand {
            return;
        }
        self.cand = *cand;
        self.holders = holders(cand);
        match made {
            Some(made) if made.with_cells.as_ref() == Some(cand) => {
                std::mem::swap(&mut self.graph, made);
            }
            _ => self.graph.build_reach(cand, &self.holders),
        }
        self.several = cells_where(|c| cand[c].count_ones() >= 2);
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.stamp.fill(0);
            self.now = 1;
        }
        // Grown only: a stamp of an earlier grid never equals `now`.
        let components = self.graph.components();
        if self.sets.len() < components {
            self.sets.resize(components, NodeSet::default());
            self.stamp.resize(components, 0);
        }
    }

    /// The nodes reached from the truth of `d` in `cell`, a candidate of
    /// the grid: the true nodes the components give, and the false nodes
    /// those link to (a true node makes its digit false in its peers and
    /// its cell's other candidates false). Worked out once per component.
    pub(super) fn reached_from(&mut self, cell: usize, d: usize) -> &NodeSet {
        let n = node(cell, d, true);
        let k = self.graph.component(n);
        if self.stamp[k] != self.now {
            let on = self.graph.truths_reached(n);
            let mut off = [0u128; 9];
            // The cells with a true node of a digit before `e`, and after.
            let mut before = [0u128; 9];
            let mut after = [0u128; 9];
            for e in 1..9 {
                before[e] = before[e - 1] | on[e - 1];
                after[8 - e] = after[9 - e] | on[9 - e];
            }
            for e in 0..9 {
                let mut peers = before[e] | after[e];
                for c in cells_of(on[e]) {
                    peers |= PEERS[c];
                }
                off[e] = peers & self.holders[e];
            }
            self.sets[k] = NodeSet { on, off };
            self.stamp[k] = self.now;
        }
        &self.sets[k]
    }

    /// Whether the truths of every one of `starts` (candidates of the
    /// grid) all reach some node that removes something from it: a
    /// candidate's falsehood, or the truth of a candidate whose cell has
    /// others.
    pub(super) fn share_removal(&mut self, starts: impl Iterator<Item = (usize, usize)>) -> bool {
        let mut common = NodeSet {
            on: [self.several; 9],
            off: self.holders,
        };
        for (cell, d) in starts {
            let set = self.reached_from(cell, d);
            for e in 0..9 {
                common.on[e] &= set.on[e];
                common.off[e] &= set.off[e];
            }
        }
        !common.is_empty()
    }
}

/// Whether a row of the components' sets holds bit `bit`.
fn row_has(row: &[u64], bit: u32) -> bool {
    let t = bit as usize;
    row[t / 64] >> (t % 64) & 1 != 0
}

/// A grid's links for searches on cell sets.
struct CellLinks<'a> {
    cand: &'a [u16; 81],
    holders: [u128; 9],
    bivalue: u128,
    /// Per digit, the houses (bit per house) where it has two places.
    pairs: [u32; 9],
}

impl CellLinks<'_> {
    /// The links of `cand`, whose digits may go in `holders`.
    fn new<'a>(cand: &'a [u16; 81], holders: &[u128; 9]) -> CellLinks<'a> {
        let holders = *holders;
        let pairs = holders.map(|held| {
            (0..27).fold(0u32, |set, h| {
                if (HOUSE_CELLS[h] & held).count_ones() == 2 {
                    set | 1 << h
                } else {
                    set
                }
            })
        });
        CellLinks {
            cand,
            holders,
            bivalue: bivalue(cand),
            pairs,
        }
    }

    /// Every node reached from the truth of any of `ons` (cells per
    /// digit), themselves included; with links inside cells (`y`) or
    /// without.
    fn reach_all(&self, mut ons: [u128; 9], y: bool) -> NodeSet {
        let mut seen = NodeSet {
            on: ons,
            off: [0; 9],
        };
        let mut offs = [0u128; 9];
        // The digits with new true and new false nodes: only those are
        // read (the others' entries of `ons` and `offs` are stale).
        let mut live_on = (0..9)
            .filter(|&e| ons[e] != 0)
            .fold(0u16, |m, e| m | 1 << e);
        let mut live_off = 0u16;
        loop {
            let (mut next_on, mut next_off) = ([0u128; 9], [0u128; 9]);
            let (mut made_on, mut made_off) = (0u16, 0u16);
            for e in bits(live_on) {
                for c in cells_of(ons[e]) {
                    // True: the digit false in its peers, and the cell's
                    // other digits false.
                    next_off[e] |= PEERS[c];
                    if y {
                        let others = self.cand[c] & !(1 << e);
                        made_off |= others;
                        for f in bits(others) {
                            next_off[f] |= CELL_BIT[c];
                        }
                    }
                }
                made_off |= 1 << e;
            }
            for e in bits(live_off) {
                // False: the digit true in the other place of a house
                // where it has two (both places, when both are false),
                // and a bivalue cell's other digit true.
                for h in bits32(self.pairs[e]) {
                    let places = HOUSE_CELLS[h] & self.holders[e];
                    let off = places & offs[e];
                    if off != 0 {
                        next_on[e] |= if off == places { places } else { places & !off };
                        made_on |= 1 << e;
                    }
                }
                if y {
                    for c in cells_of(offs[e] & self.bivalue) {
                        let f = (self.cand[c] & !(1 << e)).trailing_zeros() as usize;
                        next_on[f] |= CELL_BIT[c];
                        made_on |= 1 << f;
                    }
                }
            }
            (live_on, live_off) = (0, 0);
            for e in bits(made_off) {
                offs[e] = next_off[e] & self.holders[e] & !seen.off[e];
                seen.off[e] |= offs[e];
                if offs[e] != 0 {
                    live_off |= 1 << e;
                }
            }
            for e in bits(made_on) {
                ons[e] = next_on[e] & !seen.on[e];
                seen.on[e] |= ons[e];
                if ons[e] != 0 {
                    live_on |= 1 << e;
                }
            }
            if live_on | live_off == 0 {
                return seen;
            }
        }
    }
}

/// A graph in compact form (nodes `0..n`, each with its links out and its
/// bit, if any), its strongly connected components, and for each
/// component the set of the bits of the nodes it reaches: Tarjan's
/// algorithm, each component's set made when it is found, after those of
/// every component it reaches.
///
/// The tables per node and per component only grow: a solve sets every
/// entry it reads (a component's when it is found), so nothing is cleared
/// between graphs but the visit numbers.
struct Closure {
    /// Successors of node `i`: `edges[start[i]..start[i + 1]]`.
    start: Vec<u32>,
    edges: Vec<u32>,
    /// The bit of each node in the sets reached (`NONE`: in none).
    bit: Vec<u32>,
    /// Per node: its visit number (`NONE` until visited), the least visit
    /// number it reaches among the nodes on the stack, and its component
    /// (`NONE` while it is on the stack).
    index: Vec<u32>,
    low: Vec<u32>,
    scc_of: Vec<u32>,
    stack: Vec<u32>,
    calls: Vec<(u32, u32)>,
    /// Per component (rows of `words`), the set of the bits of the nodes
    /// it reaches; the last component whose set took it in; and, when it
    /// has more than one node (the graph has no loop from a node to
    /// itself), its number among such components (`NONE` otherwise).
    reach: Vec<u64>,
    merged: Vec<u32>,
    big: Vec<u32>,
    components: usize,
    bigs: u32,
    words: usize,
}

impl Closure {
    fn new() -> Closure {
        Closure {
            start: Vec::new(),
            edges: Vec::new(),
            bit: Vec::new(),
            index: Vec::new(),
            low: Vec::new(),
            scc_of: Vec::new(),
            stack: Vec::new(),
            calls: Vec::new(),
            reach: Vec::new(),
            merged: Vec::new(),
            big: Vec::new(),
            components: 0,
            bigs: 0,
            words: 0,
        }
    }

    /// An empty graph.
    fn clear(&mut self) {
        self.start.clear();
        self.edges.clear();
        self.bit.clear();
    }

    /// Adds the next node, with its bit in the sets reached (`NONE` for
    /// none); the edges that follow leave it.
    fn open_node(&mut self, bit: u32) {
        self.start.push(self.edges.len() as u32);
        self.bit.push(bit);
    }

    fn edge(&mut self, to: u32) {
        self.edges.push(to);
    }

    /// The set of the bits node `from` reaches.
    fn row(&self, from: u32) -> &[u64] {
        let row = self.scc_of[from as usize] as usize * self.words;
        &self.reach[row..row + self.words]
    }

    /// Whether node `from` reaches the node of bit `to`.
    fn reaches(&self, from: u32, to: u32) -> bool {
        row_has(self.row(from), to)
    }

    /// The number of the components with more than one node.
    fn nontrivial(&self) -> usize {
        self.bigs as usize
    }

    /// The number of node `n`'s component among those with more than
    /// one node, if it has more than one: then `n` lies on a cycle.
    fn nontrivial_of(&self, n: u32) -> Option<usize> {
        let k = self.big[self.scc_of[n as usize] as usize];
        (k != NONE).then_some(k as usize)
    }

    /// The components, and what each reaches among the bits `0..bits`.
    fn solve(&mut self, bits: usize) {
        let n = self.start.len();
        self.start.push(self.edges.len() as u32);
        self.words = bits.div_ceil(64).max(1);
        // Every table but the visit numbers is written before it is read.
        for table in [
            &mut self.index,
            &mut self.low,
            &mut self.scc_of,
            &mut self.merged,
            &mut self.big,
        ] {
            if table.len() < n {
                table.resize(n, NONE);
            }
        }
        self.index[..n].fill(NONE);
        if self.reach.len() < n * self.words {
            self.reach.resize(n * self.words, 0);
        }
        self.components = 0;
        self.bigs = 0;
        let mut next = 0u32;
        for root in 0..n {
            if self.index[root] != NONE {
                continue;
            }
            self.enter(root, &mut next);
            while let Some(&(v, at)) = self.calls.last() {
                let vi = v as usize;
                if at < self.start[vi + 1] {
                    if let Some(top) = self.calls.last_mut() {
                        top.1 = at + 1;
                    }
                    let w = self.edges[at as usize] as usize;
                    let iw = self.index[w];
                    if iw == NONE {
                        self.enter(w, &mut next);
                    } else if self.scc_of[w] == NONE && iw < self.low[vi] {
                        // Visited and in no component yet: on the stack.
                        self.low[vi] = iw;
                    }
                    continue;
                }
                self.calls.pop();
                let low = self.low[vi];
                if let Some(&(parent, _)) = self.calls.last() {
                    let p = parent as usize;
                    self.low[p] = self.low[p].min(low);
                }
                if low == self.index[vi] {
                    self.close(v);
                }
            }
        }
    }

    /// Visits node `v`: numbered, on the stack, its links next.
    fn enter(&mut self, v: usize, next: &mut u32) {
        self.index[v] = *next;
        self.low[v] = *next;
        self.scc_of[v] = NONE;
        *next += 1;
        self.stack.push(v as u32);
        self.calls.push((v as u32, self.start[v]));
    }

    /// Pops the component rooted at `v` and makes its set.
    fn close(&mut self, v: u32) {
        let words = self.words;
        let c = self.components;
        self.components += 1;
        let row = c * words;
        let (done, rest) = self.reach.split_at_mut(row);
        let set = &mut rest[..words];
        set.fill(0);
        self.merged[c] = NONE;
        let first = self.stack.iter().rposition(|&w| w == v).unwrap_or(0);
        let members = &self.stack[first..];
        self.big[c] = if members.len() > 1 {
            self.bigs += 1;
            self.bigs - 1
        } else {
            NONE
        };
        for &w in members {
            self.scc_of[w as usize] = c as u32;
        }
        for &w in members {
            let w = w as usize;
            let b = self.bit[w] as usize;
            if b != NONE as usize {
                set[b / 64] |= 1 << (b % 64);
            }
            let out = &self.edges[self.start[w] as usize..self.start[w + 1] as usize];
            for &e in out {
                let other = self.scc_of[e as usize] as usize;
                // Every other component it links to is found already.
                if other != c && self.merged[other] != c as u32 {
                    self.merged[other] = c as u32;
                    let from = &done[other * words..other * words + words];
                    for (to, from) in set.iter_mut().zip(from) {
                        *to |= from;
                    }
                }
            }
        }
        self.stack.truncate(first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::rate::Budget;
    use crate::solver::rate::chains::{Graph, Links, Search};
    use crate::solver::rate::cycles::closing_nodes;
    use crate::solver::rate::propagate::Chain;
    use crate::solver::rate::state::{Index, State};
    use crate::solver::rate::tests::for_each_order;
    use crate::solver::tests::unique_puzzle;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// The components say exactly which forcing chains, followed one
        /// by one, reach their target (from every candidate, true and
        /// false), and which searches from a true candidate reach a false
        /// node that forces it back; with and without links inside cells,
        /// on a puzzle's grid and on it thinned out (as inside a chain:
        /// more cells bivalue, more digits with two places in a house).
        #[test]
        fn the_components_agree_with_every_chain(
            grid in unique_puzzle(),
            thinned in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let mut state = State::new(&grid);
            if thinned {
                let mut x = seed | 1;
                for cell in 0..81 {
                    // Each candidate but the lowest of a cell, one in three.
                    let keep = state.cand[cell] & state.cand[cell].wrapping_neg();
                    for d in bits(state.cand[cell] & !keep) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if x % 3 == 0 {
                            state.cand[cell] &= !(1 << d);
                        }
                    }
                }
            }
            let index = Index::new(&state);
            let graph = Graph::new(&state, &index);
            let mut search = Search::new();
            let mut forced = Forced::new();
            let mut chain = Chain::new();
            let mut budget = Budget { left: u64::MAX };
            let mut closing = Vec::new();
            for y in [false, true] {
                let candidates: u32 = state.cand.iter().map(|c| c.count_ones()).sum();
                prop_assert_eq!(forced.build(&state.cand, y, 0x1FF, true), 2 * candidates as usize);
                for cell in 0..81 {
                    for d in bits(state.cand[cell]) {
                        for start in [node(cell, d, true), node(cell, d, false)] {
                            let followed = chain.forcing(&state, y, start, &mut budget).unwrap();
                            prop_assert_eq!(forced.reaches_conjugate(start), followed, "{} {}", start, y);
                        }
                        let start = node(cell, d, true);
                        let links = Links { x: true, y };
                        search.run(&state, &graph, links, start, usize::MAX, &mut budget).unwrap();
                        closing_nodes(&state, &index, links, cell, d, &mut closing);
                        let back = closing.iter().any(|&o| search.dist(o) != u16::MAX);
                        prop_assert_eq!(forced.on_cycle(start), back, "{} {}", start, y);
                    }
                }
            }
        }

        /// The starts said to reach their negation through a new link are
        /// exactly those with such a walk, found by following every link
        /// from every node: from a start to the falsehood of one side of
        /// a link the thinned grid made, on to the truth of its other
        /// side, and on to the start's negation. The nodes said to pass a
        /// new link are exactly those that reach the falsehood of a side.
        #[test]
        fn starts_through_new_links_are_those_with_a_walk_through_one(
            grid in unique_puzzle(),
            seed in any::<u64>(),
        ) {
            let source = State::new(&grid).cand;
            let mut current = source;
            let mut x = seed | 1;
            for cand in &mut current {
                let keep = *cand & cand.wrapping_neg();
                for d in bits(*cand & !keep) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x % 4 == 0 {
                        *cand &= !(1 << d);
                    }
                }
            }
            let links = NewLinks::new(&source, &current);
            for y in [false, true] {
                let walks = walks_through_new_links(&source, &current, y);
                let starts = links.forced_through(y, 0x1FF);
                for (cell, &cand) in current.iter().enumerate() {
                    for d in bits(cand) {
                        for n in [node(cell, d, true), node(cell, d, false)] {
                            prop_assert_eq!(starts.has(n), walks.contains(&n), "{} {}", n, y);
                        }
                    }
                }
            }
            // And the nodes whose chain can pass a new link.
            let mut statics = StaticReach::new();
            statics.begin(&current);
            let passing = links.passing(&mut statics);
            let one_by_one = passing_one_by_one(&source, &current);
            for (cell, &cand) in current.iter().enumerate() {
                for d in bits(cand) {
                    for n in [node(cell, d, true), node(cell, d, false)] {
                        prop_assert_eq!(passing.has(n), one_by_one.contains(&n), "{}", n);
                    }
                }
            }
        }

        /// The nodes the static chains' sets say the truth of a candidate
        /// reaches are exactly those found by following every link from
        /// it, one node at a time, on a puzzle's grid and on it thinned
        /// out; the grid begun again with the same candidates keeps its
        /// sets, and with others works them out afresh.
        #[test]
        fn static_sets_are_every_node_reached(grid in unique_puzzle(), seed in any::<u64>()) {
            let puzzle = State::new(&grid).cand;
            let mut thinned = puzzle;
            let mut x = seed | 1;
            for cand in &mut thinned {
                let keep = *cand & cand.wrapping_neg();
                for d in bits(*cand & !keep) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x % 3 == 0 {
                        *cand &= !(1 << d);
                    }
                }
            }
            let mut statics = StaticReach::new();
            for cand in [puzzle, puzzle, thinned, puzzle] {
                statics.begin(&cand);
                for (cell, &digits) in cand.iter().enumerate() {
                    for d in bits(digits) {
                        let expected = reached_one_by_one(&cand, true, node(cell, d, true));
                        let set = *statics.reached_from(cell, d);
                        for (n, &reached) in expected.iter().enumerate() {
                            prop_assert_eq!(set.has(n), reached, "{} {} {}", cell, d, n);
                        }
                    }
                }
            }
        }

        /// `on_placements` says whether every candidate of a digit lies on
        /// a placement, as trying every order of the open columns tells:
        /// some rows placed (those of a random placement), the open rows'
        /// candidates that placement's cells and random others.
        #[test]
        fn on_placements_agrees_with_every_order_of_the_columns(
            columns in Just((0..9u8).collect::<Vec<_>>()).prop_shuffle(),
            placed_rows in prop::collection::btree_set(0usize..9, 3..=6),
            extra in prop::collection::vec(any::<u16>(), 9),
        ) {
            // The digit placed in the rows of `placed_rows`, in the
            // columns `columns` gives them; with candidates elsewhere,
            // away from those columns and boxes.
            let mut state = State::with_candidates([0; 81]);
            let (mut rows, mut cols, mut boxes) = (0u16, 0u16, 0u16);
            for &r in &placed_rows {
                let c = usize::from(columns[r]);
                rows |= 1 << r;
                cols |= 1 << c;
                boxes |= 1 << box_of(r, c);
            }
            for r in (0..9).filter(|r| rows & 1 << r == 0) {
                let mut row = extra[r] | 1 << columns[r];
                row &= !cols & 0x1FF;
                for c in bits(row) {
                    if boxes & 1 << box_of(r, c) == 0 {
                        state.cand[r * 9 + c] = 1;
                    }
                }
            }
            let index = Index::new(&state);
            // Every assignment of the open columns to the open rows.
            let open_rows: Vec<usize> = (0..9).filter(|r| rows & 1 << r == 0).collect();
            let mut open_cols: Vec<usize> = (0..9).filter(|c| cols & 1 << c == 0).collect();
            let mut on = 0u128;
            for_each_order(&mut open_cols, 0, &mut |order| {
                let cells: Vec<usize> = open_rows.iter().zip(order).map(|(&r, &c)| r * 9 + c).collect();
                let fits = cells.iter().all(|&cell| state.cand[cell] != 0);
                let mut used = boxes;
                let apart = cells.iter().all(|&cell| {
                    let b = box_of(cell / 9, cell % 9);
                    let free = used & 1 << b == 0;
                    used |= 1 << b;
                    free
                });
                if fits && apart {
                    on |= cells.iter().fold(0u128, |set, &cell| set | 1 << cell);
                }
            });
            let held = (0..81).filter(|&c| state.cand[c] != 0).fold(0u128, |set, c| set | 1 << c);
            prop_assert_eq!(on_placements(&index, 0, rows, cols, boxes), on == held);
        }
    }

    /// Along the rated paths of generated puzzles and the hard test
    /// puzzles, answers kept from one state to the next in one
    /// [`Placements`] are the answers worked out afresh at each state, and
    /// both kept answers and fresh ones are used.
    #[test]
    fn kept_placement_answers_are_fresh_ones() {
        use crate::solver::rate::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        let (mut kept, mut states) = (Placements::new(), 0);
        let mut reused = 0;
        for grid in &mid_and_hard_puzzles(19, 30) {
            for_each_state_on_path(grid, |state, index| {
                let before = kept.answers;
                let fresh = digits_with_single_digit_conclusions(
                    state,
                    index,
                    0x1FF,
                    &mut Placements::new(),
                );
                let from_kept =
                    digits_with_single_digit_conclusions(state, index, 0x1FF, &mut kept);
                assert_eq!(from_kept, fresh, "{grid}");
                reused += (0..9)
                    .filter(|&d| before[d].is_some() && before[d] == kept.answers[d])
                    .count();
                states += 1;
            });
        }
        assert!(states > 1000, "{states}");
        assert!(reused > 1000, "{reused}");
    }

    /// Every node reached from `start` on `cand`, following [`links`] one
    /// node at a time (only within the digit without links inside cells).
    fn reached_one_by_one(cand: &[u16; 81], y: bool, start: usize) -> Vec<bool> {
        let holders = holders(cand);
        let mut seen = vec![false; NODES];
        let mut queue = vec![start];
        seen[start] = true;
        while let Some(n) = queue.pop() {
            let (cell, d) = candidate(n);
            links(cand, &holders, n % 2 == 1, cell, d, |(c, e)| {
                let m = node(c, e, n % 2 == 0);
                if (y || e == d) && !seen[m] {
                    seen[m] = true;
                    queue.push(m);
                }
            });
        }
        seen
    }

    /// The nodes of `current` with a walk to their negation through a
    /// link `source` did not have, either way along the link.
    fn walks_through_new_links(source: &[u16; 81], current: &[u16; 81], y: bool) -> Vec<usize> {
        let new_links = new_links_one_by_one(source, current, y);
        let nodes: Vec<usize> = (0..81)
            .flat_map(|c| bits(current[c]).flat_map(move |d| [node(c, d, true), node(c, d, false)]))
            .collect();
        let reach: Vec<Vec<bool>> = (0..NODES)
            .map(|n| {
                if nodes.contains(&n) {
                    reached_one_by_one(current, y, n)
                } else {
                    Vec::new()
                }
            })
            .collect();
        nodes
            .into_iter()
            .filter(|&n| {
                new_links.iter().any(|&(a, b)| {
                    [(a, b), (b, a)].into_iter().any(|((pc, pd), (qc, qd))| {
                        reach[n][node(pc, pd, false)] && reach[node(qc, qd, true)][n ^ 1]
                    })
                })
            })
            .collect()
    }

    /// The nodes of `current` whose chain reaches the falsehood of a side
    /// of a link `source` did not have (links inside cells included).
    fn passing_one_by_one(source: &[u16; 81], current: &[u16; 81]) -> Vec<usize> {
        let new_links = new_links_one_by_one(source, current, true);
        (0..81)
            .flat_map(|c| bits(current[c]).flat_map(move |d| [node(c, d, true), node(c, d, false)]))
            .filter(|&n| {
                let reached = reached_one_by_one(current, true, n);
                new_links.iter().any(|&((ac, ad), (bc, bd))| {
                    reached[node(ac, ad, false)] || reached[node(bc, bd, false)]
                })
            })
            .collect()
    }

    /// The links `current` has and `source` had not, each by its sides.
    fn new_links_one_by_one(
        source: &[u16; 81],
        current: &[u16; 81],
        y: bool,
    ) -> Vec<((usize, usize), (usize, usize))> {
        let (now, before) = (holders(current), holders(source));
        let mut new_links = Vec::new();
        for d in 0..9 {
            for house in HOUSE_CELLS {
                let places = house & now[d];
                if places.count_ones() == 2 && (house & before[d]).count_ones() > 2 {
                    let mut cells = cells_of(places);
                    if let (Some(a), Some(b)) = (cells.next(), cells.next()) {
                        new_links.push(((a, d), (b, d)));
                    }
                }
            }
        }
        for cell in 0..81 {
            if y && current[cell].count_ones() == 2 && source[cell].count_ones() > 2 {
                let mut digits = bits(current[cell]);
                if let (Some(a), Some(b)) = (digits.next(), digits.next()) {
                    new_links.push(((cell, a), (cell, b)));
                }
            }
        }
        new_links
    }
}

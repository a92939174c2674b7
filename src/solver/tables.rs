//! Lookup tables of the search's bit layout (see [`super::search`]),
//! computed at compile time: what a row, a band or a set of segments
//! implies, as one array read instead of a loop in the hot path.

/// All 27 cells of a band.
pub(crate) const ALL: u32 = (1 << 27) - 1;
/// The nine cells of one row of a band.
pub(crate) const ROW: u32 = 0x1FF;

/// For a 9-bit row, bit `k` is set when the row has a cell in box `k`.
pub(crate) static SEGMENTS_OF_ROW: [u32; 512] = segments_of_row();

/// Indexed by the 9-bit set of non-empty segments (bit `3 * row + box`): the
/// 27-bit mask of cells in segments that lie on at least one permutation
/// (rows to boxes) inside that set. Zero when there is no permutation.
pub(crate) static PERMUTATION_CELLS: [u32; 512] = permutation_cells();

/// Indexed by the 9-bit set of columns a digit may use in a band: the
/// 27-bit mask to keep in the other bands, which excludes every column that
/// is the only one left to the digit in its box.
pub(crate) static COLUMN_KEEP: [u32; 512] = column_keep();

/// A 9-bit row itself when it has exactly one cell, else zero.
pub(crate) static SINGLE_CELL_ROW: [u16; 512] = single_cell_row();

/// For each cell of a band, the other cells of its row and box in the band.
pub(crate) static BAND_PEERS: [u32; 27] = band_peers();

/// For each column, its three cells in a band.
pub(crate) static COLUMN: [u32; 9] = column_cells();

/// For each cell of a band, the three cells of its column in the band
/// (`COLUMN[cell % 9]`, without the division).
pub(crate) static CELL_COLUMN: [u32; 27] = cell_column();

/// For each cell of the grid, its 20 peers (row, column and box) as an
/// 81-bit set: band `b`'s 27 cells at bits `27 * b..27 * b + 27`, each as
/// in the band masks of the search.
pub(crate) static GRID_PEERS: [u128; 81] = grid_peers();

const fn grid_peers() -> [u128; 81] {
    let mut table = [0u128; 81];
    let mut cell = 0;
    while cell < 81 {
        let (row, col) = (cell / 9, cell % 9);
        let mut other = 0;
        while other < 81 {
            let (r, c) = (other / 9, other % 9);
            let peer = r == row || c == col || (r / 3 == row / 3 && c / 3 == col / 3);
            if peer && other != cell {
                table[cell] |= 1 << other;
            }
            other += 1;
        }
        cell += 1;
    }
    table
}

const fn segments_of_row() -> [u32; 512] {
    let mut table = [0u32; 512];
    let mut row = 0;
    while row < 512 {
        let mut k = 0;
        while k < 3 {
            if (row >> (3 * k)) & 7 != 0 {
                table[row] |= 1 << k;
            }
            k += 1;
        }
        row += 1;
    }
    table
}

/// The six orders of three things (rows, boxes, bands, stacks).
pub(crate) const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];

const fn permutation_cells() -> [u32; 512] {
    // The six ways to give each of three rows a different box.
    let mut table = [0u32; 512];
    let mut set = 0;
    while set < 512 {
        let mut keep = 0u32;
        let mut p = 0;
        while p < 6 {
            let perm = ORDERS[p];
            let segments = (1 << perm[0]) | (1 << (3 + perm[1])) | (1 << (6 + perm[2]));
            if set & segments == segments {
                keep |= segments;
            }
            p += 1;
        }
        let mut seg = 0;
        while seg < 9 {
            if keep & (1 << seg) != 0 {
                let (row, bx) = (seg / 3, seg % 3);
                table[set as usize] |= 7 << (9 * row + 3 * bx);
            }
            seg += 1;
        }
        set += 1;
    }
    table
}

const fn column_keep() -> [u32; 512] {
    let mut table = [0u32; 512];
    let mut cols = 0u32;
    while cols < 512 {
        let mut closed = 0u32;
        let mut k = 0;
        while k < 3 {
            let in_box = (cols >> (3 * k)) & 7;
            if in_box.count_ones() == 1 {
                closed |= in_box << (3 * k);
            }
            k += 1;
        }
        let closed_cells = closed | (closed << 9) | (closed << 18);
        table[cols as usize] = ALL & !closed_cells;
        cols += 1;
    }
    table
}

const fn single_cell_row() -> [u16; 512] {
    let mut table = [0u16; 512];
    let mut row = 0;
    while row < 512 {
        if (row as u32).count_ones() == 1 {
            table[row] = row as u16;
        }
        row += 1;
    }
    table
}

const fn band_peers() -> [u32; 27] {
    let mut table = [0u32; 27];
    let mut cell = 0;
    while cell < 27 {
        let (row, col) = (cell / 9, cell % 9);
        let row_cells = ROW << (9 * row);
        let box_cells = 0o007_007_007 << (3 * (col / 3));
        table[cell] = (row_cells | box_cells) & !(1 << cell);
        cell += 1;
    }
    table
}

const fn column_cells() -> [u32; 9] {
    let mut table = [0u32; 9];
    let mut col = 0;
    while col < 9 {
        table[col] = (1 << col) | (1 << (col + 9)) | (1 << (col + 18));
        col += 1;
    }
    table
}

const fn cell_column() -> [u32; 27] {
    let columns = COLUMN;
    let mut table = [0u32; 27];
    let mut cell = 0;
    while cell < 27 {
        table[cell] = columns[cell % 9];
        cell += 1;
    }
    table
}

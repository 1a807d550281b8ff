//! On-disk format helpers: footers, checksums, atomic writes. (to be written)

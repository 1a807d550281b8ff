//! The lexical index. (to be written)

//! One component per file; components only render what the state and the analysis give them.

pub mod drop_zone;
pub mod file_list;
pub mod progress;

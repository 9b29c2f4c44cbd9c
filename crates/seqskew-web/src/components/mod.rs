//! One component per file; components only render what the state and the analysis give them.

pub mod charts;
pub mod drop_zone;
pub mod failure;
pub mod file_list;
pub mod progress;
pub mod timeline;
pub mod verdict;
pub mod views;

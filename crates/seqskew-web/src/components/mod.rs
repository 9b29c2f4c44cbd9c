//! One component per file; components only render what the state and the analysis give them.
//! `shared` and `canvas` are no components: what several of them use.

mod canvas;
pub mod charts;
pub mod drop_help;
pub mod drop_zone;
pub mod failure;
pub mod file_list;
pub mod gallery;
pub mod progress;
pub mod shared;
pub mod timeline;
pub mod verdict;
pub mod views;

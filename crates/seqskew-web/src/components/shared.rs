//! `Shared`, large data passed down as props uncopied: below the page and every component.

use std::rc::Rc;

/// Shared data compared by identity (the data is large; it never changes in place).
#[derive(Clone, Debug)]
pub struct Shared<T>(pub Rc<T>);

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

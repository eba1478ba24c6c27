//! The one future type that crosses crate boundaries, and panic capture for settle.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

/// A boxed, sendable future: what trait methods of this crate return so the traits stay
/// object-safe (`Arc<dyn Permissions>`, `Arc<dyn OutputBound>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Polls an inner future and turns a panic into `Err(message)` instead of unwinding
/// through the caller; settle reports it as a [`crate::Defect`].
pub(crate) struct CatchUnwind<'a, T> {
    inner: BoxFuture<'a, T>,
}

impl<'a, T> CatchUnwind<'a, T> {
    pub(crate) fn new(inner: BoxFuture<'a, T>) -> Self {
        CatchUnwind { inner }
    }
}

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let inner = &mut self.inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}

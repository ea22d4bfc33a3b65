//! A deadline for any future on the glommio executor: network calls to S3, to a mirror's
//! source cluster, to PostgreSQL.

use std::time::Duration;

/// `None` if `future` did not finish within `limit`.
pub async fn within<T>(limit: Duration, future: impl std::future::Future<Output = T>) -> Option<T> {
    let future = std::pin::pin!(future);
    let sleep = std::pin::pin!(glommio::timer::sleep(limit));
    match futures::future::select(future, sleep).await {
        futures::future::Either::Left((value, _)) => Some(value),
        futures::future::Either::Right(_) => None,
    }
}
